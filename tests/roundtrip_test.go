package tests

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/speechcore/kokoro"
)

// roundTripSentence is one sentence (one contiguous Kokoro call: the fixture Whisper reads the
// silence between two calls as end-of-text), about 3 s of codec tones.
const roundTripSentence = "The quick brown fox jumps over the lazy dog."

var (
	phonemesOnce sync.Once
	phonemesMemo map[string]string
	phonemesMu   sync.Mutex
)

// expectedPhonemes is what the fixture Kokoro is fed for text, computed in this process by the
// kokoro package's own G2P over the mount's lexicon and vocab — the fixture Whisper must give
// exactly this back.
func expectedPhonemes(t testing.TB, text string) string {
	t.Helper()
	phonemesMu.Lock()
	defer phonemesMu.Unlock()
	phonemesOnce.Do(func() { phonemesMemo = map[string]string{} })
	if p, ok := phonemesMemo[text]; ok {
		return p
	}
	dir := filepath.Join(fixtureDir, "models", "kokoro-82m")
	lex, err := kokoro.LoadLexicon(filepath.Join(dir, "lexicon"))
	if err != nil {
		t.Fatalf("fixture lexicon: %v", err)
	}
	vocab, err := kokoro.LoadVocab(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatalf("fixture vocab: %v", err)
	}
	ps, err := kokoro.NewG2P(lex).Phonemize(kokoro.Normalize(text))
	if err != nil {
		t.Fatalf("G2P %q: %v", text, err)
	}
	ps = strings.TrimSpace(vocab.Filter(ps))
	if ps == "" {
		t.Fatalf("G2P of %q is empty", text)
	}
	phonemesMemo[text] = ps
	return ps
}

// dialWS opens a service-token socket on s.
func (s *server) dialWS(t testing.TB, path string) *websocket.Conn {
	t.Helper()
	conn, _, err := websocket.Dial(ctxT(t, 30*time.Second), s.WSBase+path, &websocket.DialOptions{
		HTTPClient: s.Client,
		HTTPHeader: http.Header{"Authorization": {"Bearer " + s.Token}},
	})
	if err != nil {
		t.Fatalf("dial %s: %v\n%s", path, err, s.logs)
	}
	conn.SetReadLimit(64 << 20)
	t.Cleanup(func() { conn.CloseNow() })
	return conn
}

func readJSON(t testing.TB, conn *websocket.Conn, d time.Duration) map[string]any {
	t.Helper()
	typ, data, err := conn.Read(ctxT(t, d))
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if typ != websocket.MessageText {
		t.Fatalf("got a %v frame (%d bytes), want a JSON text frame", typ, len(data))
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("frame is not JSON: %v: %s", err, data)
	}
	return m
}

// synthesizeWS speaks text through WS /v1/synthesize and returns the 24 kHz PCM16 of the one
// utterance (JSON "audio" header + binary pairs until utteranceComplete).
func synthesizeWS(t testing.TB, s *server, text string) []int16 {
	t.Helper()
	conn := s.dialWS(t, "/v1/synthesize")
	ready := readJSON(t, conn, 30*time.Second)
	if ready["type"] != "ready" || ready["sampleRate"] != float64(24000) {
		t.Fatalf("first frame %v, want ready with sampleRate 24000", ready)
	}
	if err := conn.Write(ctxT(t, 10*time.Second), websocket.MessageText, []byte(text)); err != nil {
		t.Fatal(err)
	}
	var pcm []int16
	var headers int
	for {
		typ, data, err := conn.Read(ctxT(t, 60*time.Second))
		if err != nil {
			t.Fatalf("synthesize read: %v", err)
		}
		if typ == websocket.MessageBinary {
			s16, err := audio.BytesToInt16(data)
			if err != nil {
				t.Fatal(err)
			}
			pcm = append(pcm, s16...)
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("synthesize: %v: %s", err, data)
		}
		switch m["type"] {
		case "audio":
			headers++
		case "utteranceComplete":
			if headers == 0 || len(pcm) == 0 {
				t.Fatalf("utteranceComplete after %d audio headers and %d samples", headers, len(pcm))
			}
			conn.Close(websocket.StatusNormalClosure, "")
			return pcm
		case "error":
			t.Fatalf("synthesize error frame: %s", data)
		}
	}
}

// transcribeWS sends 16 kHz PCM through WS /v1/transcribe, then {"type":"end"}, and returns the
// final delta's text.
func transcribeWS(t testing.TB, s *server, pcm16k []float32) string {
	t.Helper()
	conn := s.dialWS(t, "/v1/transcribe")
	ready := readJSON(t, conn, 30*time.Second)
	if ready["type"] != "ready" || ready["sampleRate"] != float64(16000) {
		t.Fatalf("first frame %v, want ready with sampleRate 16000", ready)
	}
	b := audio.Float32ToPCM16(pcm16k)
	for len(b) > 0 { // 100 ms frames, as a microphone would send
		n := min(len(b), 3200)
		if err := conn.Write(ctxT(t, 10*time.Second), websocket.MessageBinary, b[:n]); err != nil {
			t.Fatal(err)
		}
		b = b[n:]
	}
	if err := conn.Write(ctxT(t, 10*time.Second), websocket.MessageText, []byte(`{"type":"end"}`)); err != nil {
		t.Fatal(err)
	}
	for {
		m := readJSON(t, conn, 60*time.Second)
		switch m["type"] {
		case "delta":
			if m["kind"] == "final" {
				conn.Close(websocket.StatusNormalClosure, "")
				text, _ := m["text"].(string)
				return text
			}
		case "error":
			t.Fatalf("transcribe error frame: %v", m)
		}
	}
}

// TestRoundTripSockets: text → WS /v1/synthesize (fixture Kokoro) → 24 kHz PCM → resampled here
// to 16 kHz → WS /v1/transcribe (fixture Whisper) → the sentence's phonemes exactly. Any break in
// G2P, style row, waveform, resampling, mel, KV-cache loop or tokenizer changes the text.
func TestRoundTripSockets(t *testing.T) {
	checkLeaks(t)
	s := startServer(t, serverOpts{})
	want := expectedPhonemes(t, roundTripSentence)

	pcm24 := synthesizeWS(t, s, roundTripSentence)
	if got, min := len(pcm24), 1920*len([]rune(want))/2; got < min {
		t.Fatalf("synthesized %d samples for %d phonemes: too short", got, len([]rune(want)))
	}
	pcm16 := audio.Resample(audio.Int16ToFloat32(pcm24), 24000, 16000)
	got := strings.TrimSpace(transcribeWS(t, s, pcm16))
	if got != want {
		t.Fatalf("round trip through the sockets:\n got %q\nwant %q", got, want)
	}
	s.stop()
}

// TestRoundTripHTTP: POST /v1/audio/speech (wav) → POST /v1/audio/transcriptions (the same WAV,
// as an OpenAI client would pass it on; the door resamples 24 → 16 kHz) → the phonemes.
func TestRoundTripHTTP(t *testing.T) {
	checkLeaks(t)
	s := startServer(t, serverOpts{})
	want := expectedPhonemes(t, roundTripSentence)

	body, _ := json.Marshal(map[string]any{"model": "tts-1", "input": roundTripSentence, "voice": "alloy", "response_format": "wav"})
	code, wav := s.do("POST", "/v1/audio/speech", "application/json", bytes.NewReader(body))
	if code != http.StatusOK {
		t.Fatalf("speech: %d %s", code, wav)
	}
	pcm, rate, err := audio.DecodeWAVBytes(wav)
	if err != nil || rate != 24000 || len(pcm) == 0 {
		t.Fatalf("speech answered a WAV of %d samples at %d Hz (%v), want 24 kHz audio", len(pcm), rate, err)
	}

	for _, format := range []string{"json", "verbose_json", "text"} {
		t.Run(format, func(t *testing.T) {
			var form bytes.Buffer
			mw := multipart.NewWriter(&form)
			fw, _ := mw.CreateFormFile("file", "speech.wav")
			fw.Write(wav)
			mw.WriteField("model", "whisper-1")
			mw.WriteField("response_format", format)
			mw.Close()
			code, out := s.do("POST", "/v1/audio/transcriptions", mw.FormDataContentType(), &form)
			if code != http.StatusOK {
				t.Fatalf("transcriptions: %d %s", code, out)
			}
			var got string
			if format == "text" {
				got = strings.TrimSpace(string(out))
			} else {
				var r struct {
					Text     string  `json:"text"`
					Duration float64 `json:"duration"`
				}
				if err := json.Unmarshal(out, &r); err != nil {
					t.Fatalf("%v: %s", err, out)
				}
				got = r.Text
				if format == "verbose_json" && r.Duration <= 0 {
					t.Errorf("verbose_json duration %v, want > 0", r.Duration)
				}
			}
			if got != want {
				t.Fatalf("HTTP round trip (%s):\n got %q\nwant %q", format, got, want)
			}
		})
	}
	s.stop()
}
