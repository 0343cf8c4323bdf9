package session

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voiced/voiced/internal/testkit"
	"github.com/voiced/voiced/mind"
	"github.com/voiced/voiced/wire"
)

// streamChat streams text chunks as an OpenAI-compatible server does, gap apart; with
// stallAfter > 0 it goes quiet after that many chunks until the request ends.
type streamChat struct {
	chunks     []string
	gap        time.Duration
	stallAfter int
}

func (f streamChat) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	for i, text := range f.chunks {
		if f.stallAfter > 0 && i == f.stallAfter {
			<-r.Context().Done()
			return
		}
		if i > 0 {
			time.Sleep(f.gap) // a model producing tokens
		}
		b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": text}}}})
		fmt.Fprintf(w, "data: %s\n\n", b)
		w.(http.Flusher).Flush()
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// slowVoice takes d to synthesize each piece (a long reply that is slow to speak).
type slowVoice struct{ d time.Duration }

func (v slowVoice) Speak(ctx context.Context, text, voice string, speed float64, emit func([]int16) error) error {
	select {
	case <-time.After(v.d):
	case <-ctx.Done():
		return ctx.Err()
	}
	return fakeVoice{}.Speak(ctx, text, voice, speed, emit)
}

// TestMindTimeoutBoundsSilenceNotSpeech: --mind-timeout bounds the mind's silence (first token,
// stalls), not the reply: a long answer slower to speak than the timeout is spoken whole, and a
// mind that stalls mid-stream is cut with the mind's error event.
func TestMindTimeoutBoundsSilenceNotSpeech(t *testing.T) {
	// The whole answer takes longer to stream than the timeout, and far longer to speak.
	const timeout, gap = 100 * time.Millisecond, 25 * time.Millisecond
	sentences := []string{"One is first.", " Two comes next.", " Three is here.", " Four ends it.", " Five is late.", " Six is last."}
	tests := []struct {
		name       string
		stallAfter int
		wantStatus string
		wantText   string
	}{
		{name: "slow speech is not cut", wantStatus: "completed", wantText: strings.Join(sentences, "")},
		{name: "stalled mind is cut", stallAfter: 2, wantStatus: "failed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			testkit.CheckLeaks(t)
			chatSrv := httptest.NewServer(streamChat{chunks: sentences, gap: gap, stallAfter: tc.stallAfter})
			defer chatSrv.Close()
			m, err := mind.NewOpenAI(mind.OpenAIConfig{URL: chatSrv.URL + "/v1", Model: "tiny", Timeout: timeout})
			if err != nil {
				t.Fatal(err)
			}
			ts := newTestServer(t, Config{Engines: Engines{Mind: m, Voice: slowVoice{d: 3 * timeout}}})
			c := ts.open(t)
			c.send(map[string]any{"type": "response.create"})
			evs := c.until("response.done")
			done := evs[len(evs)-1]["response"].(map[string]any)
			if done["status"] != tc.wantStatus {
				t.Fatalf("status %v, want %s (%v)", done["status"], tc.wantStatus, types(evs))
			}
			var errEv map[string]any
			for _, ev := range evs {
				if ev["type"] == "error" {
					errEv = ev["error"].(map[string]any)
				}
			}
			if tc.wantStatus == "failed" {
				if errEv == nil || !strings.Contains(errEv["message"].(string), "mind") {
					t.Fatalf("no mind error event before response.done: %v", types(evs))
				}
			} else {
				if errEv != nil {
					t.Fatalf("error %v", errEv)
				}
				tr := done["output"].([]any)[0].(map[string]any)["content"].([]any)[0].(map[string]any)["transcript"]
				if tr != tc.wantText {
					t.Fatalf("transcript %q, want %q", tr, tc.wantText)
				}
			}
			c.conn.Close(websocket.StatusNormalClosure, "")
		})
	}
}

// TestVoiceFixedOnceAudioIsPresent: like OpenAI, the voice may change until the conversation
// holds assistant audio, then a change is invalid_value and the session lives on.
func TestVoiceFixedOnceAudioIsPresent(t *testing.T) {
	testkit.CheckLeaks(t)
	ts := newTestServer(t, Config{Engines: Engines{Voice: fakeVoice{}}})
	c := ts.open(t)
	voice := func(v string) map[string]any {
		return map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime",
			"audio": map[string]any{"output": map[string]any{"voice": v}}}}
	}
	c.send(voice("ash"))
	if got := c.expect("session.updated")[0]["session"].(map[string]any)["audio"].(map[string]any)["output"].(map[string]any)["voice"]; got != "ash" {
		t.Fatalf("voice %v, want ash", got)
	}
	c.send(map[string]any{"type": "conversation.item.create", "item": map[string]any{"type": "message", "role": "user",
		"content": []any{map[string]any{"type": "input_text", "text": "Hello there."}}}})
	c.expect("conversation.item.added", "conversation.item.done")
	c.send(map[string]any{"type": "response.create"})
	c.until("response.done")

	c.send(voice("verse"))
	e := c.expectError("invalid_value")
	if e["param"] != "session.audio.output.voice" || e["message"] != "Cannot update a conversation's voice if assistant audio is present." {
		t.Fatalf("error %v", e)
	}
	c.send(voice("ash")) // the same voice is no change
	c.expect("session.updated")
	c.send(map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime", "instructions": "Be brief."}})
	c.expect("session.updated")
	c.conn.Close(websocket.StatusNormalClosure, "")
}

// TestRetrieveKeepsAssistantAudio: retrieve of an assistant item carries the audio it was sent,
// in the format it was sent; a truncate cuts the kept audio where the client stopped.
func TestRetrieveKeepsAssistantAudio(t *testing.T) {
	tests := []struct {
		name   string
		format map[string]any // GA audio.output.format; nil: pcm16
		perMs  int            // bytes per ms
	}{
		{name: "pcm16", perMs: 48},
		{name: "g711_ulaw", format: map[string]any{"type": "audio/pcmu"}, perMs: 8},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			testkit.CheckLeaks(t)
			ts := newTestServer(t, Config{Engines: Engines{Voice: fakeVoice{}}})
			c := ts.open(t)
			if tc.format != nil {
				c.send(map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime",
					"audio": map[string]any{"output": map[string]any{"format": tc.format}}}})
				c.expect("session.updated")
			}
			c.send(map[string]any{"type": "conversation.item.create", "item": map[string]any{"type": "message", "role": "user",
				"content": []any{map[string]any{"type": "input_text", "text": "Say two sentences. Please do."}}}})
			c.expect("conversation.item.added", "conversation.item.done")
			c.send(map[string]any{"type": "response.create"})
			var sent []byte
			var itemID string
			for _, ev := range c.until("response.done") {
				if ev["type"] == "response.output_audio.delta" {
					b, _ := base64.StdEncoding.DecodeString(ev["delta"].(string))
					sent = append(sent, b...)
					itemID = ev["item_id"].(string)
				}
			}
			if len(sent) == 0 {
				t.Fatal("no audio sent")
			}
			retrieve := func() []byte {
				c.send(map[string]any{"type": "conversation.item.retrieve", "item_id": itemID})
				part := c.expect("conversation.item.retrieved")[0]["item"].(map[string]any)["content"].([]any)[0].(map[string]any)
				a, _ := part["audio"].(string)
				b, err := base64.StdEncoding.DecodeString(a)
				if err != nil || part["transcript"] == nil {
					t.Fatalf("retrieved part %v", part)
				}
				return b
			}
			if got := retrieve(); !bytes.Equal(got, sent) {
				t.Fatalf("retrieved %d bytes of audio, sent %d (equal: false)", len(got), len(sent))
			}
			c.send(map[string]any{"type": "conversation.item.truncate", "item_id": itemID, "content_index": 0, "audio_end_ms": 150})
			c.expect("conversation.item.truncated")
			if got := retrieve(); !bytes.Equal(got, sent[:150*tc.perMs]) {
				t.Fatalf("after truncate to 150 ms: %d bytes, want the first %d sent", len(got), 150*tc.perMs)
			}
			c.conn.Close(websocket.StatusNormalClosure, "")
		})
	}
}

// TestKeptAudioIsBounded: the conversation keeps at most keptAudio of assistant audio; the
// oldest items lose theirs first, and an item longer than the bound alone keeps none.
func TestKeptAudioIsBounded(t *testing.T) {
	h := &history{}
	item := func(id string) *entry {
		e := &entry{item: wire.Item{ID: id, Type: wire.ItemMessage, Role: wire.RoleAssistant}}
		h.add(e, "")
		return e
	}
	minute := make([]byte, 60*8000) // one minute of G.711
	a, b, d := item("a"), item("b"), item("d")
	for range 2 {
		h.keepAudio(a, wire.G711Ulaw, minute)
	}
	for range 3 {
		h.keepAudio(b, wire.G711Ulaw, minute)
	}
	if len(a.audio) != 2*len(minute) || len(b.audio) != 3*len(minute) {
		t.Fatalf("within the bound: a %d, b %d bytes", len(a.audio), len(b.audio))
	}
	h.keepAudio(d, wire.G711Ulaw, minute) // six minutes in all: the oldest item loses its audio
	if a.audio != nil || !a.audioLost || len(b.audio) != 3*len(minute) || len(d.audio) != len(minute) {
		t.Fatalf("over the bound: a %d (lost %v), b %d, d %d bytes", len(a.audio), a.audioLost, len(b.audio), len(d.audio))
	}
	h.keepAudio(a, wire.G711Ulaw, minute) // a lost item keeps nothing more
	long := item("long")
	for range 6 {
		h.keepAudio(long, wire.G711Ulaw, minute)
	}
	if a.audio != nil || long.audio != nil || !long.audioLost {
		t.Fatalf("a %d bytes, long %d bytes (lost %v)", len(a.audio), len(long.audio), long.audioLost)
	}
}

// TestRateLimitsUpdated: rate_limits.updated follows each response.created: empty without a
// quota; with one, a "tokens" entry of the seconds left today (no limit: not known), resetting at
// the next UTC midnight.
func TestRateLimitsUpdated(t *testing.T) {
	tests := []struct {
		name   string
		budget func(context.Context, Principal) (time.Duration, bool, error)
		want   string
	}{
		{name: "no quota", want: `[]`},
		{name: "quota", budget: func(context.Context, Principal) (time.Duration, bool, error) {
			return 90*time.Second + 500*time.Millisecond, true, nil
		}, want: `[{"name":"tokens","remaining":90,"reset_seconds":75355}]`}, // the clock is 03:04:05 UTC
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			testkit.CheckLeaks(t)
			ts := newTestServer(t, Config{Engines: Engines{Budget: tc.budget}})
			c := ts.open(t)
			c.send(map[string]any{"type": "response.create"})
			ev := c.expect("response.created", "rate_limits.updated")[1]
			if got, _ := json.Marshal(ev["rate_limits"]); string(got) != tc.want {
				t.Fatalf("rate_limits %s, want %s", got, tc.want)
			}
			c.until("response.done")
			c.conn.Close(websocket.StatusNormalClosure, "")
		})
	}
}
