package speechdoor

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/voiced/voiced/internal/testkit"
)

func postSpeech(t *testing.T, s *speakingServer, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(s.srv.URL+"/v1/audio/speech", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestSpeechRoute(t *testing.T) {
	testkit.CheckLeaks(t)
	s := newSpeakingServer(t, Config{})
	tests := map[string]struct {
		body        string
		contentType string
		wav         bool
		phonemes    string
		gain        float64
	}{
		"wav, OpenAI voice name → default voice": {
			body:        `{"model":"tts-1","input":"Hello world. The cat sat!","voice":"alloy","response_format":"wav"}`,
			contentType: "audio/wav", wav: true, phonemes: "həlˈO wˈɜɹld.ði kˈæt sˈæt!", gain: 1,
		},
		"pcm, mounted voice by name, speed": {
			body:        `{"input":"Hello world.","voice":"am_adam","speed":1.25,"response_format":"pcm"}`,
			contentType: "audio/pcm", phonemes: "həlˈO wˈɜɹld.", gain: 0.9,
		},
		"explicit wav": {
			body:        `{"input":"The cat sat.","response_format":"wav","instructions":"ignored"}`,
			contentType: "audio/wav", wav: true, phonemes: "ði kˈæt sˈæt.", gain: 1,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			resp := postSpeech(t, s, tc.body)
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != tc.contentType {
				t.Fatalf("%d %s: %.200s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
			}
			pcm := body
			if tc.wav {
				if len(body) < 44 || string(body[:4]) != "RIFF" || string(body[8:12]) != "WAVE" {
					t.Fatalf("not a WAV header: % x", body[:min(len(body), 44)])
				}
				if binary.LittleEndian.Uint32(body[4:]) != 0xFFFFFFFF || binary.LittleEndian.Uint32(body[40:]) != 0xFFFFFFFF {
					t.Errorf("streaming WAV sizes should be unknown (0xFFFFFFFF)")
				}
				if rate := binary.LittleEndian.Uint32(body[24:]); rate != 24000 {
					t.Errorf("WAV rate %d", rate)
				}
				pcm = body[44:]
			}
			ps, gain := decodePhonemes(t, pcm)
			// Sentences are spoken back to back; the codec shows no space between them.
			if ps != tc.phonemes || math.Abs(gain-tc.gain) > 0.01 {
				t.Errorf("body decodes to %q at gain %.2f, want %q at %.2f", ps, gain, tc.phonemes, tc.gain)
			}
		})
	}
}

func TestSpeechRouteRefusals(t *testing.T) {
	s := newSpeakingServer(t, Config{})
	tests := map[string]struct {
		body   string
		status int
		code   string
		param  string
	}{
		"not json":          {`input=hello`, 400, "invalid_request_body", ""},
		"no input":          {`{"voice":"alloy"}`, 400, "empty_text", "input"},
		"blank input":       {`{"input":"   "}`, 400, "empty_text", "input"},
		"only emoji":        {`{"input":"🙂🎉"}`, 400, "empty_text", "input"},
		"voice not mounted": {`{"input":"Hello.","voice":"nobody"}`, 400, "voice_not_mounted", "voice"},
		"speed too slow":    {`{"input":"Hello.","speed":0.2}`, 400, "speed_out_of_range", "speed"},
		"speed too fast":    {`{"input":"Hello.","speed":4.5}`, 400, "speed_out_of_range", "speed"},
		"speed zero":        {`{"input":"Hello.","speed":0}`, 400, "speed_out_of_range", "speed"},
		"ogg":               {`{"input":"Hello.","response_format":"ogg"}`, 400, "unsupported_response_format", "response_format"},
		"chunked stream":    {`{"input":"Hello.","stream_format":"chunks"}`, 400, "unsupported_stream_format", "stream_format"},
		"input over 4 MiB":  {`{"input":"` + strings.Repeat("a", 5<<20) + `"}`, 413, "text_too_large", "input"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			resp := postSpeech(t, s, tc.body)
			var e struct {
				Error struct {
					Message string  `json:"message"`
					Type    string  `json:"type"`
					Param   *string `json:"param"`
					Code    string  `json:"code"`
				} `json:"error"`
			}
			raw, _ := io.ReadAll(resp.Body)
			if err := json.NewDecoder(bytes.NewReader(raw)).Decode(&e); err != nil {
				t.Fatalf("%d %q: not OpenAI's error shape", resp.StatusCode, raw)
			}
			if resp.StatusCode != tc.status || e.Error.Code != tc.code || e.Error.Type != "invalid_request_error" || e.Error.Message == "" {
				t.Errorf("%d %+v, want %d %s", resp.StatusCode, e.Error, tc.status, tc.code)
			}
			if got := ""; e.Error.Param != nil {
				got = *e.Error.Param
				if got != tc.param {
					t.Errorf("param %q, want %q", got, tc.param)
				}
			} else if tc.param != "" {
				t.Errorf("param missing, want %q", tc.param)
			}
			if tc.code == "voice_not_mounted" && !strings.Contains(e.Error.Message, "af_heart") {
				t.Errorf("unknown-voice message does not list the mounted voices: %s", e.Error.Message)
			}
		})
	}
}

// failingWriter is a response whose client went away: every body write after the first fails,
// while the request's context is still live (the server has not noticed yet).
type failingWriter struct {
	header http.Header
	writes int
}

func (w *failingWriter) Header() http.Header { return w.header }
func (w *failingWriter) WriteHeader(int)     {}
func (w *failingWriter) Write(b []byte) (int, error) {
	w.writes++
	if w.writes > 1 {
		return 0, errors.New("write: broken pipe")
	}
	return len(b), nil
}

// TestSpeechClientGoneIsAWarning (issue 18, 8h): a client that stops taking a streamed answer is
// the client's doing: logged as a warning, not at ERROR.
func TestSpeechClientGoneIsAWarning(t *testing.T) {
	var logs bytes.Buffer
	s := newSpeakingServer(t, Config{Log: slog.New(slog.NewTextHandler(&logs, nil))})
	door := NewSpeechDoor(s.svc)
	body := `{"input":"` + strings.Repeat("This sentence is spoken again. ", 40) + `","response_format":"pcm"}`
	req := httptest.NewRequest("POST", "/v1/audio/speech", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	w := &failingWriter{header: http.Header{}}
	func() {
		defer func() { // net/http ends the response quietly on ErrAbortHandler
			if p := recover(); p != nil && p != http.ErrAbortHandler {
				panic(p)
			}
		}()
		door.ServeHTTP(w, req)
	}()
	if w.writes < 2 {
		t.Fatalf("%d writes: the answer never reached its second piece", w.writes)
	}
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("a client gone mid-answer was logged at ERROR:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("no warning for the client gone mid-answer:\n%s", logs.String())
	}
}
