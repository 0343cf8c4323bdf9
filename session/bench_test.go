package session

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// BenchmarkTextTurnFirstAudio: response.create → first audio delta, Echo mind and a voice that
// answers at once: the session's own overhead per turn (encode, queue, write, read back).
func BenchmarkTextTurnFirstAudio(b *testing.B) {
	t := b
	// The event rate limit off: the loop sends a response.create per turn, faster than the
	// 100/s a client may (it would be refused, then closed 1008).
	ts := newTestServer(t, Config{EventRate: -1, Engines: Engines{Voice: fakeVoice{}}})
	c := &client{t: t}
	conn, _, err := websocket.Dial(context.Background(), "ws"+ts.URL[4:]+"/v1/voice?ticket="+ts.ticket(t), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.CloseNow()
	conn.SetReadLimit(ReadLimit)
	c.conn = conn
	c.expect("session.created")
	c.send(map[string]any{"type": "conversation.item.create", "item": map[string]any{"type": "message", "role": "user",
		"content": []any{map[string]any{"type": "input_text", "text": "hello"}}}})
	c.expect("conversation.item.added", "conversation.item.done")
	var first time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		c.send(map[string]any{"type": "response.create"})
		c.until("response.output_audio.delta")
		first += time.Since(start)
		c.until("response.done")
	}
	b.ReportMetric(float64(first.Microseconds())/float64(b.N), "µs-to-first-audio")
}

// BenchmarkIdleConversationMemory: heap and goroutines held by one open, idle conversation.
func BenchmarkIdleConversationMemory(b *testing.B) {
	t := b
	const n = 50
	ts := newTestServer(t, Config{MaxConversations: n, MaxPerTenant: n})
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		g0 := runtime.NumGoroutine()
		var conns []*websocket.Conn
		for range n {
			conn, _, err := websocket.Dial(context.Background(), "ws"+ts.URL[4:]+"/v1/voice?ticket="+ts.ticket(t), nil)
			if err != nil {
				b.Fatal(err)
			}
			conn.SetReadLimit(ReadLimit)
			(&client{t: t, conn: conn}).expect("session.created")
			conns = append(conns, conn)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapInuse-before.HeapInuse)/n, "heap-B/conversation")
		b.ReportMetric(float64(runtime.NumGoroutine()-g0)/n, "goroutines/conversation")
		for _, c := range conns {
			c.Close(websocket.StatusNormalClosure, "")
		}
	}
}
