package speechdoor

import (
	"bytes"
	"context"
	"io"
	"math"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/speechcore/kokoro"
)

// usageRecorder is a fake durable meter: it keeps every Add, counts the Syncs and the holders,
// and notes an Add made while no door held it.
type usageRecorder struct {
	mu       sync.Mutex
	calls    []usageCall
	syncs    int           // Sync calls
	holders  int           // doors holding it now
	unheld   int           // Adds while no door held it
	released chan struct{} // poked at each release
}

var _ DurableUsage = (*usageRecorder)(nil)

func newUsageRecorder() *usageRecorder { return &usageRecorder{released: make(chan struct{}, 1)} }

func (r *usageRecorder) Sync(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.syncs++
	return nil
}

func (r *usageRecorder) Hold() (release func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.holders++
	var once sync.Once
	return func() {
		once.Do(func() {
			r.mu.Lock()
			r.holders--
			r.mu.Unlock()
			select {
			case r.released <- struct{}{}:
			default:
			}
		})
	}
}

// checkDurable: every Add was made while a door held the recorder and was followed by a Sync
// before the door answered; every hold is released once the door is done (within 10 s).
func (r *usageRecorder) checkDurable(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	calls, syncs, unheld := len(r.calls), r.syncs, r.unheld
	r.mu.Unlock()
	if syncs != calls || unheld != 0 {
		t.Errorf("%d Adds, %d Syncs, %d Adds while no door held the meter: want one Sync per Add, all held", calls, syncs, unheld)
	}
	deadline := time.After(10 * time.Second)
	for {
		r.mu.Lock()
		holders := r.holders
		r.mu.Unlock()
		if holders == 0 {
			return
		}
		select {
		case <-r.released:
		case <-deadline:
			t.Errorf("%d doors still hold the meter 10 s after they were done", holders)
			return
		}
	}
}

type usageCall struct {
	principal, org, door string
	heard, spoken        float64
}

func (r *usageRecorder) Add(principal, org, door string, heard, spoken float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, usageCall{principal, org, door, heard, spoken})
	if r.holders == 0 {
		r.unheld++
	}
}

// totals sums the calls; any call not under the service principal at door fails the test.
func (r *usageRecorder) totals(t *testing.T, door string) (heard, spoken float64, calls int) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.calls {
		if c.principal != UsagePrincipal || c.org != "" || c.door != door {
			t.Errorf("metered %+v, want principal %q, org \"\", door %q", c, UsagePrincipal, door)
		}
		heard += c.heard
		spoken += c.spoken
	}
	return heard, spoken, len(r.calls)
}

func sameSeconds(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// TestRawDoorsMeterSpoken: each speaking door meters exactly the audio it sent, under the service
// principal, as it sends it (one Add per frame or sentence, not one at the end).
func TestRawDoorsMeterSpoken(t *testing.T) {
	tests := map[string]func(t *testing.T, s *speakingServer) (samples int){
		"synthesize": func(t *testing.T, s *speakingServer) int {
			c := dial(t, s.wsURL("/v1/synthesize"), nil)
			c.expect("ready")
			c.text("Hello world. The cat sat!")
			samples := 0
			for range 2 {
				c.expect("audio")
				samples += len(c.binary()) / 2
			}
			c.expect("utteranceComplete") // written after the audio: its Adds are in
			// The door is done once the client closes: its hold is released.
			c.conn.Close(websocket.StatusNormalClosure, "")
			return samples
		},
		"speak stream": func(t *testing.T, s *speakingServer) int {
			c := openSpeak(t, s)
			c.msg(map[string]any{"type": "start", "voice": "af_heart"})
			c.msg(map[string]any{"type": "text", "text": "Hello world. "})
			c.msg(map[string]any{"type": "flush"})
			c.expect("speaking")
			pcm := c.binary()
			c.expect("spoken")
			c.conn.Close(websocket.StatusNormalClosure, "")
			return len(pcm) / 2
		},
		"audio speech": func(t *testing.T, s *speakingServer) int {
			resp := postSpeech(t, s, `{"input":"Hello world. The cat sat!","voice":"af_heart","response_format":"pcm"}`)
			body, err := io.ReadAll(resp.Body) // the body ends after the handler returned
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("%d %v", resp.StatusCode, err)
			}
			return len(body) / 2
		},
	}
	for name, speak := range tests {
		t.Run(name, func(t *testing.T) {
			rec := newUsageRecorder()
			s := newSpeakingServer(t, Config{Usage: rec})
			samples := speak(t, s)
			heard, spoken, calls := rec.totals(t, UsageDoorSynthesize)
			want := float64(samples) / kokoro.SampleRate
			if samples == 0 || heard != 0 || !sameSeconds(spoken, want) {
				t.Errorf("metered heard %g spoken %g s, want 0 and %g s (%d samples sent)", heard, spoken, want, samples)
			}
			if calls == 0 {
				t.Error("nothing metered")
			}
			rec.checkDurable(t)
		})
	}
}

// TestRawDoorsMeterHeard: each hearing door meters the audio it put before the decoder: every
// frame /v1/transcribe takes, every window /v1/audio/transcriptions decodes, and exactly the
// durations /v1/audio/transcript acks (squelched audio meters 0).
func TestRawDoorsMeterHeard(t *testing.T) {
	tests := map[string]func(t *testing.T, h *hearingServer) (want float64, minCalls int){
		"transcribe": func(t *testing.T, h *hearingServer) (float64, int) {
			pcm, _ := codecSpeech(t, "həlˈO wˈɜɹld.")
			c := dialSTT(t, h.wsURL("/v1/transcribe"))
			c.until("ready", "")
			c.sendAudio(pcm)
			c.send(websocket.MessageText, []byte(`{"type":"end"}`))
			c.until("delta", "final") // every frame was taken before its final was asked for
			// The door is done once the client closes: its hold is released.
			c.conn.Close(websocket.StatusNormalClosure, "")
			frames := (len(pcm) + 319) / 320
			return float64(len(pcm)) / audio.WhisperSampleRate, frames
		},
		"transcriptions": func(t *testing.T, h *hearingServer) (float64, int) {
			pcm, _ := codecSpeech(t, "həlˈO wˈɜɹld.")
			var body bytes.Buffer
			mw := multipart.NewWriter(&body)
			// Raw PCM is read only when the part declares it (anything else is sniffed).
			hdr := textproto.MIMEHeader{}
			hdr.Set("Content-Disposition", `form-data; name="file"; filename="a.pcm"`)
			hdr.Set("Content-Type", "audio/pcm")
			fw, _ := mw.CreatePart(hdr)
			fw.Write(audio.Float32ToPCM16(pcm))
			mw.Close()
			resp, err := http.Post(h.srv.URL+"/v1/audio/transcriptions", mw.FormDataContentType(), &body)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			return float64(len(pcm)) / audio.WhisperSampleRate, 1
		},
		"transcript": func(t *testing.T, h *hearingServer) (float64, int) {
			speech := realSpeech(t)
			c := transcriptClient{t: t, url: h.srv.URL}
			id := c.open()
			acked, pushes := 0.0, 0
			const push = audio.WhisperSampleRate / 4
			for i := 0; i+push <= len(speech) && i < 8*audio.WhisperSampleRate; i += push {
				status, ack := c.do("POST", "/v1/audio/transcript/"+id, audio.Float32ToPCM16(speech[i:i+push]))
				if status != 200 {
					t.Fatalf("push: %d %v", status, ack)
				}
				if d := ack["duration"].(float64); d > 0 {
					acked += d
					pushes++
				}
			}
			if status, done := c.do("DELETE", "/v1/audio/transcript/"+id, nil); status != 200 {
				t.Fatalf("close: %d %v", status, done)
			}
			if acked == 0 {
				t.Fatal("the squelch admitted nothing of real speech")
			}
			return acked, pushes
		},
	}
	for name, hear := range tests {
		t.Run(name, func(t *testing.T) {
			rec := newUsageRecorder()
			h := newHearingServer(t, Config{Usage: rec})
			want, minCalls := hear(t, h)
			heard, spoken, calls := rec.totals(t, UsageDoorTranscribe)
			if spoken != 0 || !sameSeconds(heard, want) {
				t.Errorf("metered heard %g spoken %g s, want %g and 0", heard, spoken, want)
			}
			if calls < minCalls {
				t.Errorf("%d Adds, want at least %d (metered as audio flows)", calls, minCalls)
			}
			rec.checkDurable(t)
		})
	}
}
