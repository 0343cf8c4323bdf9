package session

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voiced/voiced/internal/testkit"
)

// holdingMeter is a MeterHolder that checks the contract: every Record of a conversation comes
// while it holds the meter, and every hold is released.
type holdingMeter struct {
	recordingMeter
	mu          sync.Mutex
	held, holds int
	late        int // Records while nothing was held
}

func (m *holdingMeter) Hold() func() {
	m.mu.Lock()
	m.held++
	m.holds++
	m.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			m.mu.Lock()
			m.held--
			m.mu.Unlock()
		})
	}
}

func (m *holdingMeter) Record(ctx context.Context, u Usage) error {
	m.mu.Lock()
	if m.held == 0 {
		m.late++
	}
	m.mu.Unlock()
	return m.recordingMeter.Record(ctx, u)
}

// A conversation holds the meter from its start until after its last Record, however it ends:
// the client's close, the session limit, the idle timeout.
func TestConversationHoldsMeterToItsLastRecord(t *testing.T) {
	testkit.CheckLeaks(t)
	readToClose := func(c *client) {
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, _, err := c.conn.Read(ctx)
			cancel()
			if err != nil {
				return
			}
		}
	}
	for name, tc := range map[string]struct {
		cfg Config
		end func(c *client)
	}{
		"client closes": {Config{}, func(c *client) { c.conn.Close(websocket.StatusNormalClosure, "") }},
		"session limit": {Config{SessionLimit: time.Second}, func(c *client) {
			for range 11 {
				c.send(appendEvent(pcm24(100, false)))
			}
			readToClose(c)
		}},
		"idle": {Config{IdleTimeout: 300 * time.Millisecond}, readToClose},
	} {
		t.Run(name, func(t *testing.T) {
			meter := &holdingMeter{}
			tc.cfg.Engines = Engines{Ears: fakeEars{"hi"}, Voice: fakeVoice{}, Meter: meter}
			ts := newTestServer(t, tc.cfg)
			c := ts.open(t)
			c.send(map[string]any{"type": "conversation.item.create", "item": map[string]any{"type": "message", "role": "user",
				"content": []any{map[string]any{"type": "input_text", "text": "hello there"}}}})
			c.until("conversation.item.done")
			c.send(map[string]any{"type": "response.create"})
			c.until("response.done")
			c.send(appendEvent(pcm24(100, false)))
			tc.end(c)
			ts.http.Close()
			ts.Wait()
			meter.mu.Lock()
			defer meter.mu.Unlock()
			if meter.holds != 1 || meter.held != 0 {
				t.Fatalf("holds %d, still held %d; want one hold, released", meter.holds, meter.held)
			}
			if meter.late != 0 {
				t.Fatalf("%d Records after the hold was released", meter.late)
			}
			if heard, spoken, _ := meter.total(); heard <= 0 || spoken <= 0 {
				t.Fatalf("metered heard %v spoken %v, want both", heard, spoken)
			}
		})
	}
}
