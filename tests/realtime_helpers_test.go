package tests

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/internal/realtimeclient"
)

// ---- real speech (Silero does not open on tones: SPEC §8) ----

// sileroSpeech reads one of the silero-vad-go module's recordings (float32 LE 16 kHz) and returns
// it as 24 kHz PCM16, the realtime socket's input format.
func sileroSpeech(t testing.TB, name string) []int16 {
	t.Helper()
	dir := os.Getenv("VOICED_SILERO_TESTFILES")
	if dir == "" {
		t.Skip("VOICED_SILERO_TESTFILES is not set (make test exports it): no real speech to speak")
	}
	raw, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Skipf("real speech %s: %v", name, err)
	}
	f := make([]float32, len(raw)/4)
	for i := range f {
		f[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return audio.Float32ToInt16(audio.Resample(f, 16000, 24000))
}

// espeakSpeech is espeak-ng saying text, as 24 kHz PCM16; skips when espeak-ng is absent.
func espeakSpeech(t testing.TB, text string) []int16 {
	t.Helper()
	bin, err := exec.LookPath("espeak-ng")
	if err != nil {
		t.Skip("espeak-ng is not installed (scripts/install-deps.sh installs it)")
	}
	// -w, not --stdout: the piped WAV declares a streaming (0x7ffff000) data size.
	file := filepath.Join(t.TempDir(), "espeak.wav")
	if out, err := exec.Command(bin, "-v", "en-us", "-w", file, text).CombinedOutput(); err != nil {
		t.Fatalf("espeak-ng: %v: %s", err, out)
	}
	wav, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pcm, rate, err := audio.DecodeWAVBytes(wav)
	if err != nil {
		t.Fatalf("espeak-ng WAV: %v", err)
	}
	return audio.Float32ToInt16(audio.Resample(pcm, rate, 24000))
}

func silence24k(seconds float64) []int16 { return make([]int16, int(seconds*24000)) }

// ---- tickets ----

// mintBeta asks POST /v1/realtime/sessions (principal JWT) for a beta ephemeral key.
func (s *server) mintBeta(t testing.TB, jwt string) string {
	t.Helper()
	code, body := s.post(t, "/v1/realtime/sessions", jwt, `{"model":"gpt-4o-realtime-preview","voice":"alloy"}`)
	var r struct {
		ClientSecret struct {
			Value     string `json:"value"`
			ExpiresAt int64  `json:"expires_at"`
		} `json:"client_secret"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &r) != nil || !strings.HasPrefix(r.ClientSecret.Value, "ek_") || r.ClientSecret.ExpiresAt == 0 {
		t.Fatalf("POST /v1/realtime/sessions: %d %s, want 200 with client_secret{value ek_…, expires_at}", code, body)
	}
	return r.ClientSecret.Value
}

// mintGA asks POST /v1/realtime/client_secrets (principal JWT) for a GA ephemeral key.
func (s *server) mintGA(t testing.TB, jwt string) string {
	t.Helper()
	code, body := s.post(t, "/v1/realtime/client_secrets", jwt, `{"expires_after":{"anchor":"created_at","seconds":60},"session":{"type":"realtime","model":"gpt-realtime"}}`)
	var r struct {
		Value     string          `json:"value"`
		ExpiresAt int64           `json:"expires_at"`
		Session   json.RawMessage `json:"session"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &r) != nil || !strings.HasPrefix(r.Value, "ek_") || len(r.Session) == 0 {
		t.Fatalf("POST /v1/realtime/client_secrets: %d %s, want 200 with value ek_…, expires_at, session", code, body)
	}
	return r.Value
}

func (s *server) post(t testing.TB, path, bearer, body string) (int, []byte) {
	t.Helper()
	code, b, _ := s.postHeader(t, path, bearer, body)
	return code, b
}

// postHeader posts a JSON body with a bearer and returns the status, the body and the headers.
func (s *server) postHeader(t testing.TB, path, bearer, body string) (int, []byte, http.Header) {
	t.Helper()
	req, _ := http.NewRequest("POST", s.Base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+bearer)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.Client.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp.Header
}

// ---- a raw realtime socket holding the strict client's rules ----

type rtEvent struct {
	Type string
	Raw  []byte
	M    map[string]any
}

func (e rtEvent) str(path ...string) string {
	v, _ := e.get(path...).(string)
	return v
}

func (e rtEvent) get(path ...string) any {
	var cur any = e.M
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}

// rtConn is one realtime conversation socket. Its reader goroutine checks every server event
// against @openai/realtime-api-beta's rules (realtime-protocol.md §1.2) and hands it on.
type rtConn struct {
	t      testing.TB
	conn   *websocket.Conn
	beta   bool
	events chan rtEvent
	quit   chan struct{}
	done   chan struct{}

	mu         sync.Mutex
	violations []string
	seen       []string // types, for failure messages
	readErr    error
}

// itemEvents name an item the client must already hold (it looks the item up and would throw).
var itemEvents = map[string]bool{
	"response.content_part.added": true, "response.content_part.done": true,
	"response.audio.delta": true, "response.audio.done": true,
	"response.audio_transcript.delta": true, "response.audio_transcript.done": true,
	"response.text.delta": true, "response.text.done": true,
	"response.output_audio.delta": true, "response.output_audio.done": true,
	"response.output_audio_transcript.delta": true, "response.output_audio_transcript.done": true,
	"response.output_text.delta": true, "response.output_text.done": true,
	"response.function_call_arguments.delta": true, "response.function_call_arguments.done": true,
	"response.output_item.done": true, "conversation.item.truncated": true,
}

// dialRealtime opens /v1/realtime with a bearer (ticket or JWT); beta adds OpenAI-Beta.
func (s *server) dialRealtime(t testing.TB, bearer string, beta bool) *rtConn {
	t.Helper()
	conn, err := realtimeclient.Dial(ctxT(t, 30*time.Second), s.WSBase+"/v1/realtime?model=gpt-4o-realtime-preview", realtimeclient.Options{
		Bearer: bearer, Beta: beta, HTTPClient: s.Client, Subprotocols: []string{"realtime"},
	})
	if err != nil {
		status := 0
		var refused *realtimeclient.DialError
		if errors.As(err, &refused) {
			status = refused.StatusCode
		}
		t.Fatalf("dial /v1/realtime: %v (HTTP %d)\n%s", err, status, s.logs)
	}
	return newRTConn(t, conn.Conn, beta)
}

// newRTConn starts the checking reader on an open realtime socket; cleanup closes it and waits.
func newRTConn(t testing.TB, conn *websocket.Conn, beta bool) *rtConn {
	conn.SetReadLimit(64 << 20)
	c := &rtConn{t: t, conn: conn, beta: beta, events: make(chan rtEvent, 1<<14), quit: make(chan struct{}), done: make(chan struct{})}
	go c.read()
	t.Cleanup(c.close)
	return c
}

func (c *rtConn) read() {
	defer close(c.done)
	defer close(c.events)
	items := map[string]bool{}
	created := "conversation.item.created"
	if !c.beta {
		created = "conversation.item.added"
	}
	for {
		_, data, err := c.conn.Read(context.Background())
		if err != nil {
			c.mu.Lock()
			c.readErr = err
			c.mu.Unlock()
			return
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			c.violate("a frame that is not JSON: %.200s", data)
			continue
		}
		ev := rtEvent{Raw: data, M: m}
		ev.Type, _ = m["type"].(string)
		c.mu.Lock()
		c.seen = append(c.seen, ev.Type)
		c.mu.Unlock()
		if id, _ := m["event_id"].(string); id == "" {
			c.violate("%s without event_id", ev.Type)
		}
		checkItem := func(item any, where string) {
			it, _ := item.(map[string]any)
			if it == nil {
				c.violate("%s: no item", where)
				return
			}
			switch it["type"] {
			case "message":
				if _, ok := it["content"].([]any); !ok {
					c.violate("%s: message item %v without content: []", where, it["id"])
				}
			case "function_call":
				if _, ok := it["arguments"].(string); !ok {
					c.violate("%s: function_call item %v without arguments string", where, it["id"])
				}
			}
		}
		switch ev.Type {
		case created:
			checkItem(m["item"], ev.Type)
			if id := ev.str("item", "id"); id != "" {
				items[id] = true
			}
		case "response.output_item.added":
			checkItem(m["item"], ev.Type)
		case "response.created":
			if out, ok := ev.get("response", "output").([]any); !ok || len(out) != 0 {
				c.violate("response.created without output: [] (%v)", ev.get("response", "output"))
			}
		}
		if itemEvents[ev.Type] {
			id := ev.str("item_id")
			if ev.Type == "response.output_item.done" {
				id = ev.str("item", "id")
			}
			if !items[id] {
				c.violate("%s names item %q before %s", ev.Type, id, created)
			}
		}
		select {
		case c.events <- ev:
		case <-c.quit:
			return
		}
	}
}

func (c *rtConn) violate(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.violations = append(c.violations, fmt.Sprintf(format, args...))
}

// checkStrict fails the test for every rule the server broke so far.
func (c *rtConn) checkStrict() {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, v := range c.violations {
		c.t.Errorf("strict client rule broken: %s", v)
	}
	c.violations = nil
}

func (c *rtConn) close() {
	c.conn.Close(websocket.StatusNormalClosure, "")
	select {
	case <-c.quit:
	default:
		close(c.quit)
	}
	<-c.done
}

func (c *rtConn) send(v any) {
	c.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := c.conn.Write(ctxT(c.t, 10*time.Second), websocket.MessageText, b); err != nil {
		c.t.Fatalf("send %.80s: %v", b, err)
	}
}

// appendAudio sends pcm (24 kHz) as input_audio_buffer.append events of 100 ms.
func (c *rtConn) appendAudio(pcm []int16) {
	c.t.Helper()
	for len(pcm) > 0 {
		n := min(len(pcm), 2400)
		c.send(map[string]any{"type": "input_audio_buffer.append", "audio": base64.StdEncoding.EncodeToString(audio.Int16ToBytes(pcm[:n]))})
		pcm = pcm[n:]
	}
}

// next returns the next event; an "error" event fails the test unless allowErrors.
func (c *rtConn) next(d time.Duration) (rtEvent, bool) {
	c.t.Helper()
	select {
	case ev, ok := <-c.events:
		return ev, ok
	case <-time.After(d):
		c.mu.Lock()
		seen := c.seen[max(0, len(c.seen)-30):]
		c.mu.Unlock()
		c.t.Fatalf("no server event in %s; last seen: %v", d, seen)
		return rtEvent{}, false
	}
}

// until reads events up to and including the first of type typ (and, when pred is set, for which
// pred holds), returning all of them. An error event fails the test.
func (c *rtConn) until(typ string, pred func(rtEvent) bool) []rtEvent {
	c.t.Helper()
	var got []rtEvent
	for {
		ev, ok := c.next(60 * time.Second)
		if !ok {
			c.mu.Lock()
			err := c.readErr
			c.mu.Unlock()
			c.t.Fatalf("socket ended (%v) waiting for %s; got %v", err, typ, types(got))
		}
		got = append(got, ev)
		if ev.Type == "error" && typ != "error" {
			c.t.Fatalf("error event waiting for %s: %s", typ, ev.Raw)
		}
		if ev.Type == typ && (pred == nil || pred(ev)) {
			return got
		}
	}
}

// untilCompleted reads through response.done events until one whose status is completed (server_vad
// may cancel earlier responses when the recording pauses and resumes: that is barge-in) and
// returns the events from that response's response.created on.
func (c *rtConn) untilCompleted() []rtEvent {
	c.t.Helper()
	for {
		evs := c.until("response.done", nil)
		if evs[len(evs)-1].str("response", "status") != "completed" {
			continue
		}
		for i := len(evs) - 1; i >= 0; i-- {
			if evs[i].Type == "response.created" {
				return evs[i:]
			}
		}
		return evs
	}
}

func types(evs []rtEvent) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

// replyAudio gathers a response's audio deltas (either dialect) as 24 kHz PCM16.
func replyAudio(t testing.TB, evs []rtEvent) []int16 {
	t.Helper()
	var pcm []int16
	for _, e := range evs {
		if e.Type != "response.audio.delta" && e.Type != "response.output_audio.delta" {
			continue
		}
		b, err := base64.StdEncoding.DecodeString(e.str("delta"))
		if err != nil {
			t.Fatalf("%s delta is not base64: %v", e.Type, err)
		}
		s, err := audio.BytesToInt16(b)
		if err != nil {
			t.Fatalf("%s delta: %v", e.Type, err)
		}
		pcm = append(pcm, s...)
	}
	return pcm
}

// replyTranscript is the response's audio transcript (the .done event's, else the deltas joined).
func replyTranscript(evs []rtEvent) string {
	var deltas strings.Builder
	for _, e := range evs {
		switch e.Type {
		case "response.audio_transcript.done", "response.output_audio_transcript.done":
			return e.str("transcript")
		case "response.audio_transcript.delta", "response.output_audio_transcript.delta":
			deltas.WriteString(e.str("delta"))
		}
	}
	return deltas.String()
}

// betaSessionUpdate is what @openai/realtime-api-beta sends on open (client.js), with
// turn_detection as given.
func betaSessionUpdate(turnDetection any) map[string]any {
	return map[string]any{"type": "session.update", "session": map[string]any{
		"modalities": []string{"text", "audio"}, "instructions": "", "voice": "verse",
		"input_audio_format": "pcm16", "output_audio_format": "pcm16",
		"input_audio_transcription": nil, "turn_detection": turnDetection,
		"tools": []any{}, "tool_choice": "auto", "temperature": 0.8, "max_response_output_tokens": 4096,
	}}
}

func textItem(text string) map[string]any {
	return map[string]any{"type": "conversation.item.create", "item": map[string]any{
		"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": text}},
	}}
}

func serverVAD() map[string]any {
	return map[string]any{"type": "server_vad", "threshold": 0.5, "prefix_padding_ms": 300, "silence_duration_ms": 500}
}
