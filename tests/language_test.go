package tests

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/voiced/voiced/audio"
)

// TestLanguagesRoundTripHTTP (issue 21): for each language the fixture mount serves, POST
// /v1/audio/speech with a voice of that language (the real G2P: misaki for af_heart, espeak-ng
// es for ef_dora) → POST /v1/audio/transcriptions with language=auto (the real mel front end,
// language detection from the decoder's language-token scores, the real decode loop) gives the
// phonemes back and names the language; told the wrong language it does not. A Japanese voice
// and a language the mount lacks are refused by name, and /v1/speech/health lists both.
func TestLanguagesRoundTripHTTP(t *testing.T) {
	checkLeaks(t)
	s := startServer(t, serverOpts{})
	cases := []struct {
		voice, text, phonemes, code, name string
	}{
		{"af_heart", roundTripSentence, expectedPhonemes(t, roundTripSentence), "en", "english"},
		{"ef_dora", "Hola, ¿cómo estás?", "ˈola, kˈomo estˈas?", "es", "spanish"},
	}
	transcribe := func(t *testing.T, wav []byte, fields map[string]string) (int, []byte) {
		var form bytes.Buffer
		mw := multipart.NewWriter(&form)
		fw, _ := mw.CreateFormFile("file", "speech.wav")
		fw.Write(wav)
		for k, v := range fields {
			mw.WriteField(k, v)
		}
		mw.Close()
		return s.do("POST", "/v1/audio/transcriptions", mw.FormDataContentType(), &form)
	}
	for _, c := range cases {
		t.Run(c.code, func(t *testing.T) {
			body, _ := json.Marshal(map[string]any{"model": "tts-1", "input": c.text, "voice": c.voice, "response_format": "wav"})
			code, wav := s.do("POST", "/v1/audio/speech", "application/json", bytes.NewReader(body))
			if code != http.StatusOK {
				t.Fatalf("speech: %d %s", code, wav)
			}
			code, out := transcribe(t, wav, map[string]string{"language": "auto", "response_format": "verbose_json"})
			var v struct {
				Text, Language string
				Segments       []struct{ Start, End float64 }
			}
			if code != http.StatusOK || json.Unmarshal(out, &v) != nil {
				t.Fatalf("transcriptions: %d %s", code, out)
			}
			if v.Text != c.phonemes || v.Language != c.name || len(v.Segments) != 1 || v.Segments[0].Start != 0 {
				t.Fatalf("auto: %q in %q (%+v), want %q in %q", v.Text, v.Language, v.Segments, c.phonemes, c.name)
			}
			wrong := map[string]string{"en": "es", "es": "en"}[c.code]
			code, out = transcribe(t, wav, map[string]string{"language": wrong})
			if code != http.StatusOK || strings.Contains(string(out), c.phonemes) {
				t.Fatalf("told %s: %d %s", wrong, code, out)
			}
		})
	}
	body, _ := json.Marshal(map[string]any{"model": "tts-1", "input": "こんにちは", "voice": "jf_alpha"})
	if code, out := s.do("POST", "/v1/audio/speech", "application/json", bytes.NewReader(body)); code != 400 || !strings.Contains(string(out), "voice_language_not_served") {
		t.Fatalf("jf_alpha: %d %s", code, out)
	}
	if code, out := transcribe(t, []byte("RIFF"), map[string]string{"language": "fr"}); code != 400 || !strings.Contains(string(out), "language_not_served") {
		t.Fatalf("fr: %d %s", code, out)
	}
	code, out := s.do("GET", "/v1/speech/health", "", nil)
	var h struct {
		Transcription struct {
			Languages       []struct{ Code string }
			DetectsLanguage bool
		}
		Synthesis struct {
			Languages []struct {
				Code   string
				Served bool
				Voices []string
			}
		}
	}
	if code != 200 || json.Unmarshal(out, &h) != nil || len(h.Transcription.Languages) != 2 || !h.Transcription.DetectsLanguage {
		t.Fatalf("health: %d %s", code, out)
	}
	served := map[string]bool{}
	for _, l := range h.Synthesis.Languages {
		served[l.Code] = l.Served
	}
	if !served["es"] || served["ja"] || served["zh"] || !served["en-us"] {
		t.Fatalf("synthesis languages %+v", h.Synthesis.Languages)
	}
}

// TestSessionTranscriptionLanguage (issue 21): a realtime session's
// input_audio_transcription.language (beta) / audio.input.transcription.language (GA) reaches
// the decode: Spanish speech committed in a session told es is transcribed as Spanish; with auto
// it is detected as Spanish and the completed event names it; a language the mount lacks fails
// the transcription by name.
func TestSessionTranscriptionLanguage(t *testing.T) {
	checkLeaks(t)
	s := startRealtime(t, serverOpts{})
	body, _ := json.Marshal(map[string]any{"model": "tts-1", "input": "Hola, ¿cómo estás?", "voice": "ef_dora", "response_format": "wav"})
	code, wav := s.do("POST", "/v1/audio/speech", "application/json", bytes.NewReader(body))
	if code != http.StatusOK {
		t.Fatalf("speech: %d %s", code, wav)
	}
	pcm, _, err := audio.DecodeWAVBytes(wav)
	if err != nil {
		t.Fatal(err)
	}
	speech := audio.Float32ToInt16(pcm) // 24 kHz: the session's pcm16
	for _, c := range []struct {
		language, want, failure, detected string
	}{
		{"es", "ˈola, kˈomo estˈas?", "", ""},
		{"auto", "ˈola, kˈomo estˈas?", "", "es"},
		{"fr", "", "language_not_served", ""},
	} {
		t.Run(c.language, func(t *testing.T) {
			conn := s.dialRealtime(t, s.jwt("lang-"+randHex(4), ""), true)
			defer conn.close()
			conn.until("session.created", nil)
			update := betaSessionUpdate(nil)
			update["session"].(map[string]any)["input_audio_transcription"] = map[string]any{"model": "whisper-1", "language": c.language}
			conn.send(update)
			conn.until("session.updated", nil)
			conn.send(map[string]any{"type": "input_audio_buffer.append", "audio": base64.StdEncoding.EncodeToString(audio.Int16ToBytes(speech))})
			conn.send(map[string]any{"type": "input_audio_buffer.commit"})
			if c.failure != "" {
				evs := conn.until("conversation.item.input_audio_transcription.failed", nil)
				if got := evs[len(evs)-1].str("error", "code"); got != c.failure {
					t.Fatalf("failed with %q, want %q", got, c.failure)
				}
				return
			}
			evs := conn.until("conversation.item.input_audio_transcription.completed", nil)
			if got := evs[len(evs)-1].str("transcript"); got != c.want {
				t.Fatalf("transcript %q, want %q", got, c.want)
			}
			// auto: the decoder's language scores found Spanish, and the event says so (voiced's
			// extra field); a told language is not reported again.
			if got := evs[len(evs)-1].str("language"); got != c.detected {
				t.Fatalf("completed event's language %q, want %q", got, c.detected)
			}
		})
	}
}
