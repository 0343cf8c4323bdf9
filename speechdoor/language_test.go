package speechdoor

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/speechcore/fixture"
)

// spanishSpeech is espeak-ng's es phonemes for "Hola, ¿cómo estás?" through the fixture Kokoro.
const spanishSpeech = "ˈola, kˈomo estˈas?"

// twoUtterances is the fixture speaking a, a 400 ms pause, then b (16 kHz), and where each is.
func twoUtterances(a, b string) (pcm []float32, first, second [2]float64) {
	ia, ib := fixture.PhonemeIDs(a), fixture.PhonemeIDs(b)
	const gap = 5
	wave := append(fixture.Waveform(ia, 1), make([]float32, gap*fixture.PhonemeSamples)...)
	wave = append(wave, fixture.Waveform(ib, 1)...)
	slot := 0.08
	return audio.Resample(wave, fixture.SampleRate, audio.WhisperSampleRate),
		[2]float64{0, float64(len(ia)) * slot},
		[2]float64{float64(len(ia)+gap) * slot, float64(len(ia)+gap+len(ib)) * slot}
}

func TestTranscriptionsLanguage(t *testing.T) {
	h := newHearingServer(t, Config{})
	es, esText := codecSpeech(t, spanishSpeech)
	en, enText := codecSpeech(t, sttSentence)
	cases := map[string]struct {
		pcm      []float32
		language string
		text     string
		name     string
	}{
		"es told":     {es, "es", esText, "spanish"},
		"es detected": {es, "auto", esText, "spanish"},
		"en detected": {en, "auto", enText, "english"},
		"en default":  {en, "", enText, "english"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			fields := map[string]string{"response_format": "verbose_json"}
			if c.language != "" {
				fields["language"] = c.language
			}
			resp, body := postTranscription(t, h, wavBytes(c.pcm, 16000, 1), fields)
			var v verboseTranscription
			if resp.StatusCode != 200 || json.Unmarshal(body, &v) != nil {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			if v.Text != c.text || v.Language != c.name {
				t.Fatalf("text %q language %q, want %q %q", v.Text, v.Language, c.text, c.name)
			}
		})
	}
	// Spanish speech decoded as English (the server default) is not the Spanish text.
	resp, body := postTranscription(t, h, wavBytes(es, 16000, 1), map[string]string{"language": "en"})
	if resp.StatusCode != 200 || strings.Contains(string(body), esText) {
		t.Fatalf("es speech told en: %d %s", resp.StatusCode, body)
	}
}

func TestTranscriptionsSegmentsAndLogprobs(t *testing.T) {
	h := newHearingServer(t, Config{})
	a, b := "hˈɛloʊ wˈɜɹld.", "ɡʊd mˈɔːɹnɪŋ."
	pcm, first, second := twoUtterances(a, b)
	file := wavBytes(pcm, 16000, 1)
	resp, body := postTranscription(t, h, file, map[string]string{
		"response_format": "verbose_json", "timestamp_granularities[]": "segment", "include[]": "logprobs"})
	var v verboseTranscription
	if resp.StatusCode != 200 || json.Unmarshal(body, &v) != nil {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if len(v.Segments) != 2 {
		t.Fatalf("segments %+v", v.Segments)
	}
	for i, want := range [][2]float64{first, second} {
		s := v.Segments[i]
		if s.ID != i || math.Abs(s.Start-want[0]) > 0.021 || math.Abs(s.End-want[1]) > 0.021 {
			t.Errorf("segment %d at %.3f–%.3f, speech at %.3f–%.3f", i, s.Start, s.End, want[0], want[1])
		}
	}
	if strings.TrimSpace(v.Segments[0].Text) != fixture.Phonemes(fixture.PhonemeIDs(a)) || len(v.Logprobs) == 0 {
		t.Fatalf("segment 0 %q, %d logprobs", v.Segments[0].Text, len(v.Logprobs))
	}
	for _, lp := range v.Logprobs {
		if lp.Logprob > 0 || len(lp.Bytes) == 0 || lp.Token == "" {
			t.Fatalf("logprob %+v", lp)
		}
	}
	// srt and vtt: one cue per segment, at the segment's times.
	for format, want := range map[string]string{
		"srt": "1\n00:00:00,000 --> 00:00:" + stamp(first[1], ",") + "\n",
		"vtt": "WEBVTT\n\n00:00:00.000 --> 00:00:" + stamp(first[1], ".") + "\n",
	} {
		resp, body := postTranscription(t, h, file, map[string]string{"response_format": format})
		if resp.StatusCode != 200 || !strings.HasPrefix(string(body), want) || strings.Count(string(body), " --> ") != 2 {
			t.Errorf("%s:\n%s\nwant two cues starting %q", format, body, want)
		}
	}
	// json with logprobs.
	resp, body = postTranscription(t, h, file, map[string]string{"include[]": "logprobs"})
	var j struct {
		Text     string
		Logprobs []logprobJSON
	}
	if resp.StatusCode != 200 || json.Unmarshal(body, &j) != nil || len(j.Logprobs) == 0 {
		t.Fatalf("json logprobs: %d %s", resp.StatusCode, body)
	}
}

// stamp is sec as the cue's mm:ss + sep + mmm (under an hour).
func stamp(sec float64, sep string) string {
	ms := int64(math.Round(sec * 1000))
	return fmt.Sprintf("%02d%s%03d", ms/1000%60, sep, ms%1000)
}

func TestTranscriptionsLanguageRefusals(t *testing.T) {
	h := newHearingServer(t, Config{})
	pcm, _ := codecSpeech(t, "ə")
	wav := wavBytes(pcm, 16000, 1)
	for name, c := range map[string]struct {
		fields map[string]string
		code   string
	}{
		"unknown language":     {map[string]string{"language": "xx"}, "unknown_language"},
		"language not mounted": {map[string]string{"language": "fr"}, "language_not_served"},
		"word timestamps":      {map[string]string{"response_format": "verbose_json", "timestamp_granularities[]": "word"}, "word_timestamps_unsupported"},
		"unknown granularity":  {map[string]string{"timestamp_granularities[]": "phrase"}, "invalid_timestamp_granularity"},
		"unknown include":      {map[string]string{"include[]": "everything"}, "invalid_form"},
	} {
		t.Run(name, func(t *testing.T) {
			resp, body := postTranscription(t, h, wav, c.fields)
			var e struct{ Error door.OpenAIError }
			if json.Unmarshal(body, &e) != nil || resp.StatusCode != 400 || e.Error.Code != c.code {
				t.Fatalf("%d %s, want 400 %s", resp.StatusCode, body, c.code)
			}
		})
	}
}

// TestTranscribeDoorLanguageAndSegments: /v1/transcribe?language=auto&timestamps=true&logprobs=true
// detects each final's language and its finals carry segments at stream times and logprobs; a
// language the mount lacks is refused at the handshake by name.
func TestTranscribeDoorLanguageAndSegments(t *testing.T) {
	h := newHearingServer(t, Config{})
	c := dialSTT(t, h.wsURL("/v1/transcribe?language=auto&timestamps=true&logprobs=true"))
	if ready := c.next(); ready["language"] != "auto" {
		t.Fatalf("ready %v", ready)
	}
	es, esText := codecSpeech(t, spanishSpeech)
	c.sendAudio(es)
	c.send(websocket.MessageText, []byte(`{"type":"end"}`))
	final, _ := c.until("delta", "final")
	if final["text"] != esText || final["language"] != "es" {
		t.Fatalf("final %v, want %q in es", final, esText)
	}
	pcm, first, second := twoUtterances("hˈɛloʊ wˈɜɹld.", "ɡʊd mˈɔːɹnɪŋ.")
	c.sendAudio(pcm)
	c.send(websocket.MessageText, []byte(`{"type":"end"}`))
	final, _ = c.until("delta", "final")
	segs, _ := final["segments"].([]any)
	offset := final["t0Ms"].(float64) / 1000
	if final["language"] != "en" || len(segs) != 2 {
		t.Fatalf("final %v", final)
	}
	for i, want := range [][2]float64{first, second} {
		s := segs[i].(map[string]any)
		if math.Abs(s["start"].(float64)-offset-want[0]) > 0.021 || math.Abs(s["end"].(float64)-offset-want[1]) > 0.021 {
			t.Errorf("segment %d %v, speech at %v + %.3f", i, s, want, offset)
		}
	}
	if lps, _ := final["logprobs"].([]any); len(lps) == 0 {
		t.Errorf("no logprobs: %v", final)
	}
	c.conn.Close(websocket.StatusNormalClosure, "")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, resp, err := websocket.Dial(ctx, h.wsURL("/v1/transcribe?language=fr"), nil)
	if err == nil || resp == nil || resp.StatusCode != 400 {
		t.Fatalf("fr at the handshake: %v %+v", err, resp)
	}
	body, _ := io.ReadAll(resp.Body)
	var e door.ErrorFrame
	if json.Unmarshal(body, &e) != nil || e.Name != "language_not_served" {
		t.Fatalf("fr body %s", body)
	}
}
