package session

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voiced/voiced/internal/testkit"
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
	testkit.CheckLeaks(t)
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
	testkit.CheckLeaks(t)
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
	testkit.CheckLeaks(t)
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

func TestPrincipalBuckets(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	b := newPrincipalBuckets(100, 300)
	for i, step := range []struct {
		who      string
		n        float64
		at       time.Duration
		want     bool
		wantWait time.Duration
	}{
		{"a", 200, 0, true, 0},
		{"a", 200, 0, false, time.Second}, // 100 left: nothing spent
		{"a", 100, 0, true, 0},
		{"b", 300, 0, true, 0}, // a budget per principal
		{"a", 150, time.Second, false, 500 * time.Millisecond},
		{"a", 150, 1500 * time.Millisecond, true, 0},
		{"a", 300, time.Hour, true, 0}, // the refill stops at the burst
		{"a", 1, time.Hour, false, 10 * time.Millisecond},
		{"c", 301, time.Hour, false, 10 * time.Millisecond}, // over the burst: never
	} {
		if wait, got := b.take(step.who, step.n, t0.Add(step.at)); got != step.want || wait != step.wantWait {
			t.Fatalf("step %d: %s takes %g at %v: %v after %v, want %v after %v", i, step.who, step.n, step.at, got, wait, step.want, step.wantWait)
		}
	}
	b.giveBack("a", 120)
	if _, ok := b.take("a", 120, t0.Add(time.Hour)); !ok {
		t.Fatal("giveBack returned less than was taken")
	}
	if _, ok := b.take("a", 1, t0.Add(time.Hour)); ok {
		t.Fatal("giveBack returned more than was taken")
	}
	if _, ok := newPrincipalBuckets(-1, 0).take("a", 1<<30, t0); !ok {
		t.Fatal("a negative rate is no limit")
	}

	// The map forgets the principals whose bucket is full again.
	b = newPrincipalBuckets(1000, 1000)
	for i := range 10000 {
		b.take(fmt.Sprint("p", i), 1000, t0.Add(time.Duration(i)*time.Millisecond))
	}
	if n := len(b.buckets); n > 2100 { // ~1000 spent in the last second, and what grew since the last sweep
		t.Fatalf("%d principals kept, want those of the last second or two", n)
	}
}

// TestEventBytesLimit: every client event but an append spends its bytes from its principal's
// budget before it is decoded; over it the event is refused by name (rate_limit_exceeded, naming
// its event_id) unread; appends are not charged (one in a shape the fast path does not read is
// charged, then given back); the budget refills with the clock and is the principal's, across its
// connections; a connection that keeps sending past twice the allowance is closed with 1008.
func TestEventBytesLimit(t *testing.T) {
	testkit.CheckLeaks(t)
	const burst = 1 << 20
	ts := newTestServer(t, Config{EventBytes: burst, EventBytesBurst: burst,
		Engines: Engines{Ears: fakeEars{"words"}, Voice: fakeVoice{}}})
	long := strings.Repeat("x", 400<<10) // an event of ~400 KiB
	update := func(c *client, id string) {
		c.send(map[string]any{"type": "session.update", "event_id": id, "session": map[string]any{"instructions": long}})
	}
	refused := func(c *client, id string) map[string]any {
		t.Helper()
		e := c.expectError(codeRateLimited)
		if e["event_id"] != id || e["type"] != "invalid_request_error" || !strings.Contains(e["message"].(string), "bytes") {
			t.Fatalf("refusal %v, want invalid_request_error naming %s and the byte budget", e, id)
		}
		return e
	}
	c := ts.open(t)
	update(c, "evt_1")
	update(c, "evt_2")
	c.expect("session.updated", "session.updated")
	update(c, "evt_3") // 400 KiB over the ~224 left
	refused(c, "evt_3")
	audio := fmt.Sprint(appendEvent(pcm24(2000, false))["audio"]) // 128 KiB of base64
	for range 10 {                                                // appends are not charged
		c.sendRaw(`{"type":"input_audio_buffer.append","audio":"` + audio + `"}`)
	}
	for range 4 { // nor one the fast path does not read: charged until it has decoded, then given back
		c.sendRaw(`{"type":"input_audio_buffer.append","audio":"` + audio + `","x":1}`)
	}
	c.send(map[string]any{"type": "input_audio_buffer.clear", "event_id": "evt_small"})
	c.expect("input_audio_buffer.cleared")

	ts.clock.Advance(time.Second) // the budget refills: 1 MiB
	update(c, "evt_3b")
	update(c, "evt_3c")
	c.expect("session.updated", "session.updated")

	other := ts.open(t) // the same principal: what evt_3b and c spent is spent here too
	update(other, "evt_4")
	refused(other, "evt_4")
	code, out := ts.post(t, "/v1/voice/session", token(t, ts.clock, map[string]any{"sub": "user-2", "org": "org-b"}), nil, nil)
	if code != 200 {
		t.Fatalf("mint: %d %v", code, out)
	}
	c2, _, err := ts.dial(t, "/v1/voice?ticket="+out["ticket"].(string), nil)
	if err != nil {
		t.Fatal(err)
	}
	c2.expect("session.created")
	update(c2, "evt_5") // another principal's budget is its own
	c2.expect("session.updated")

	// An event over the burst can never pass: it says so.
	c2.send(map[string]any{"type": "conversation.item.create", "event_id": "evt_big", "item": map[string]any{"type": "message", "role": "user",
		"content": []any{map[string]any{"type": "input_text", "text": strings.Repeat("y", 2<<20)}}}})
	if e := refused(c2, "evt_big"); !strings.Contains(e["message"].(string), "never") {
		t.Fatalf("over the burst: %v, want it to say it can never be accepted", e)
	}

	// evt_4 spent 400 KiB of other's strikes, evt_6 400 more: the next one closes it, its refusal first.
	update(other, "evt_6")
	refused(other, "evt_6")
	update(other, "evt_7")
	refused(other, "evt_7")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, _, err := other.conn.Read(ctx); websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
		t.Fatalf("close %v, want 1008 after the client kept sending over its byte budget", err)
	}
}
