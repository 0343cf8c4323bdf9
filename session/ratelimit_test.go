package session

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

func TestEventLimiter(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tt := range []struct {
		name  string
		rate  float64
		burst int
		at    []time.Duration // when each event comes, from t0
		want  []verdict
	}{
		{"burst then drops then close", 1, 2, []time.Duration{0, 0, 0, 0, 0},
			[]verdict{allowed, allowed, dropped, dropped, abusive}},
		{"refills at the rate", 2, 2, []time.Duration{0, 0, 0, 500 * time.Millisecond, 500 * time.Millisecond},
			[]verdict{allowed, allowed, dropped, allowed, dropped}},
		{"refill never passes the burst", 10, 2, []time.Duration{0, time.Hour, time.Hour, time.Hour},
			[]verdict{allowed, allowed, allowed, dropped}},
		{"strikes refill too", 1, 1, []time.Duration{0, 0, time.Second, time.Second, 3 * time.Second},
			[]verdict{allowed, dropped, allowed, dropped, allowed}},
		{"off", -1, 0, []time.Duration{0, 0, 0, 0}, []verdict{allowed, allowed, allowed, allowed}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := newEventLimiter(tt.rate, tt.burst)
			for i, at := range tt.at {
				if got := l.take(t0.Add(at)); got != tt.want[i] {
					t.Fatalf("event %d at %v: %d, want %d", i, at, got, tt.want[i])
				}
			}
		})
	}
}

// TestEventRateLimit: over the burst a client event is dropped and refused by name
// (rate_limit_exceeded, naming its event_id); appends are not counted; the bucket refills with
// the clock; a client that keeps sending past twice its allowance is closed with 1008.
func TestEventRateLimit(t *testing.T) {
	leakCheck(t)
	ts := newTestServer(t, Config{EventRate: 5, EventBurst: 5,
		Engines: Engines{Ears: fakeEars{"words"}, Voice: fakeVoice{}}})
	c := ts.open(t)
	update := func(id string) {
		c.send(map[string]any{"type": "session.update", "event_id": id, "session": map[string]any{"instructions": id}})
	}
	for i := range 5 {
		update(fmt.Sprintf("evt_ok%d", i))
		c.expect("session.updated")
	}
	for i := range 50 { // appends are not counted
		c.send(appendEvent(pcm24(20, false)))
		_ = i
	}
	for i := range 3 {
		update(fmt.Sprintf("evt_over%d", i))
		if e := c.expectError(codeRateLimited); e["event_id"] != fmt.Sprintf("evt_over%d", i) || e["type"] != "invalid_request_error" {
			t.Fatalf("refusal %v, want invalid_request_error naming evt_over%d", e, i)
		}
	}
	ts.clock.Advance(time.Second) // 5 more events, and the strikes back to 5
	for i := range 5 {
		update(fmt.Sprintf("evt_later%d", i))
		c.expect("session.updated")
	}
	for i := range 5 {
		c.sendRaw(fmt.Sprintf(`{"type":"hostile.%d","event_id":"evt_h%d"}`, i, i)) // refused events count too
		c.expectError(codeRateLimited)
	}
	update("evt_last")
	for i := range 200 { // a client that does not stop: the close still reaches it, with its error first
		c.sendRaw(fmt.Sprintf(`{"type":"hostile.%d"}`, i))
	}
	c.expectError(codeRateLimited)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, _, err := c.conn.Read(ctx); websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
		t.Fatalf("close %v, want 1008 after the client kept sending over its rate", err)
	}
}

// TestEventRateCloseAfterBacklog: a burst far over the limit, sent without reading, fills the
// writer's queue; the close the limit queues behind it must still reach the client (1008, after
// every refusal), even though the client keeps sending after it.
func TestEventRateCloseAfterBacklog(t *testing.T) {
	leakCheck(t)
	ts := newTestServer(t, Config{EventRate: 1, EventBurst: 200,
		Engines: Engines{Ears: fakeEars{"words"}, Voice: fakeVoice{}}})
	c := ts.open(t)
	for i := range 1000 {
		c.sendRaw(fmt.Sprintf(`{"type":"session.update","event_id":"evt_%d","session":{"instructions":"n %d"}}`, i, i))
	}
	updated, limited := 0, 0
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, b, err := c.conn.Read(ctx)
		cancel()
		if err != nil {
			if websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
				t.Fatalf("after %d session.updated and %d refusals: %v, want close 1008", updated, limited, err)
			}
			break
		}
		switch {
		case strings.Contains(string(b), `"session.updated"`):
			updated++
		case strings.Contains(string(b), codeRateLimited):
			limited++
		}
	}
	if updated != 200 || limited != 201 { // 200 dropped, then the one that closes
		t.Errorf("%d session.updated and %d refusals, want 200 and 201", updated, limited)
	}
}

// TestOutOfBandCap: out-of-band responses run beside the conversation's, but a client may hold
// only maxOutOfBand of them at once: each is a mind call and a synthesis, and the event rate
// alone would let a burst start hundreds. Past it response.create (conversation none) is refused
// by name; when one ends there is room again.
func TestOutOfBandCap(t *testing.T) {
	leakCheck(t)
	gate := make(chan struct{})
	ts := newTestServer(t, Config{Engines: Engines{Ears: fakeEars{"words"}, Voice: fakeVoice{gate: gate}}})
	c := ts.open(t)
	c.send(map[string]any{"type": "conversation.item.create", "item": map[string]any{"type": "message", "role": "user",
		"content": []any{map[string]any{"type": "input_text", "text": "hello"}}}})
	c.until("conversation.item.done")
	for i := range maxOutOfBand + 4 {
		c.send(map[string]any{"type": "response.create", "event_id": fmt.Sprintf("evt_oob%d", i),
			"response": map[string]any{"conversation": "none"}})
	}
	created, refused := 0, 0
	for created+refused < maxOutOfBand+4 {
		ev := c.next()
		switch ev["type"] {
		case "response.created":
			created++
		case "error":
			e := ev["error"].(map[string]any)
			if e["code"] != codeTooManyResponses || e["event_id"] == "" {
				t.Fatalf("refusal %v, want %s naming its event", e, codeTooManyResponses)
			}
			refused++
		}
	}
	if created != maxOutOfBand || refused != 4 {
		t.Fatalf("%d out-of-band responses started and %d refused, want %d and 4", created, refused, maxOutOfBand)
	}
	close(gate) // they finish; then there is room again
	for done := 0; done < maxOutOfBand; {
		if ev := c.next(); ev["type"] == "response.done" {
			done++
		}
	}
	c.send(map[string]any{"type": "response.create", "response": map[string]any{"conversation": "none"}})
	c.until("response.done")
}
