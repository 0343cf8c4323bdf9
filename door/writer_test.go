package door

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coder/websocket"
)

// recordConn records what a Writer wrote; a write of "stuck" blocks until its context ends, one
// of "fail" fails.
type recordConn struct {
	mu     sync.Mutex
	wrote  []string
	closed string
}

func (c *recordConn) Write(ctx context.Context, typ websocket.MessageType, data []byte) error {
	switch string(data) {
	case "stuck":
		<-ctx.Done()
		return ctx.Err()
	case "fail":
		return errors.New("broken pipe")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wrote = append(c.wrote, typ.String()+":"+string(data))
	return nil
}

func (c *recordConn) Close(code websocket.StatusCode, reason string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = code.String() + " " + reason
	return nil
}

func (c *recordConn) got() ([]string, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.wrote...), c.closed
}

func text(s string) Message { return Message{Type: websocket.MessageText, Data: []byte(s)} }

// Messages are written in order, a stale one is dropped, a barrier writes nothing, Done sees each
// message taken, and the close frame ends Run.
func TestWriterOrderAndClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		conn := &recordConn{}
		var taken []string
		w := NewWriter(WriterConfig{Queue: 8, Timeout: time.Second, Done: func(m Message, written bool) {
			if m.Data != nil {
				taken = append(taken, string(m.Data)+map[bool]string{true: "+", false: "-"}[written])
			}
		}})
		ctx := context.Background()
		w.Send(ctx, text("a"))
		w.Send(ctx, Message{Type: websocket.MessageText, Data: []byte("old"), Stale: func() bool { return true }})
		w.Send(ctx, Message{Type: websocket.MessageBinary, Data: []byte{}})
		w.Close(ctx, websocket.StatusGoingAway, "bye")
		if err := w.Run(ctx, conn); err != nil {
			t.Fatalf("Run = %v, want nil after the close frame", err)
		}
		wrote, closed := conn.got()
		if len(wrote) != 2 || wrote[0] != "MessageText:a" || wrote[1] != "MessageBinary:" || closed != "StatusGoingAway bye" {
			t.Errorf("wrote %q, closed %q", wrote, closed)
		}
		if len(taken) != 3 || taken[0] != "a+" || taken[1] != "old-" || taken[2] != "+" {
			t.Errorf("Done saw %q", taken)
		}
		if w.Send(ctx, text("late")) || w.TrySend(text("late")) || w.Flush(ctx) {
			t.Error("a send after Run returned was taken")
		}
	})
}

// A write past the timeout ends Run with ErrSlowReader; a failed write with its error; Finish ends
// Run with nothing closed; Flush returns once what was before it is written.
func TestWriterEnds(t *testing.T) {
	tests := map[string]struct {
		last    Message
		want    error
		elapsed time.Duration
	}{
		"stuck write": {text("stuck"), ErrSlowReader, 5 * time.Second},
		"failed":      {text("fail"), nil, 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := NewWriter(WriterConfig{Queue: 4, Timeout: 5 * time.Second})
				w.Send(context.Background(), tc.last)
				start := time.Now()
				err := w.Run(context.Background(), &recordConn{})
				if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) || (tc.want == nil && errors.Is(err, ErrSlowReader)) {
					t.Errorf("Run = %v, want %v", err, tc.want)
				}
				if time.Since(start) != tc.elapsed {
					t.Errorf("Run took %v, want %v", time.Since(start), tc.elapsed)
				}
			})
		})
	}

	synctest.Test(t, func(t *testing.T) {
		conn := &recordConn{}
		w := NewWriter(WriterConfig{Queue: 4})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ran := make(chan error)
		go func() { ran <- w.Run(ctx, conn) }()
		w.Send(ctx, text("x"))
		if !w.Flush(ctx) {
			t.Fatal("Flush failed")
		}
		if wrote, _ := conn.got(); len(wrote) != 1 {
			t.Fatalf("after Flush wrote %q", wrote)
		}
		w.Finish(ctx)
		if err := <-ran; err != nil {
			t.Fatalf("Run = %v after Finish", err)
		}
		if _, closed := conn.got(); closed != "" {
			t.Errorf("Finish closed the conn: %q", closed)
		}
	})
}

// A full queue: TrySend refuses at once, Send waits until ctx ends or the writer makes room.
func TestWriterFullQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := NewWriter(WriterConfig{Queue: 1})
		ctx := context.Background()
		if !w.TrySend(text("a")) || w.TrySend(text("b")) {
			t.Fatal("TrySend: want the first taken, the second refused")
		}
		short, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if w.Send(short, text("b")) {
			t.Fatal("Send into a full queue returned true without a writer")
		}
		run, stop := context.WithCancel(ctx)
		done := make(chan error)
		go func() { done <- w.Run(run, &recordConn{}) }()
		if !w.Send(ctx, text("b")) {
			t.Fatal("Send with a writer running failed")
		}
		synctest.Wait()
		if w.Len() != 0 {
			t.Errorf("Len %d after the writer drained", w.Len())
		}
		stop()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run = %v, want context.Canceled", err)
		}
		select {
		case <-w.Stopped():
		default:
			t.Error("Stopped not closed after Run")
		}
	})
}

func TestWatchDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		draining := make(chan struct{})
		calls := 0
		stop := WatchDrain(context.Background(), draining, func() { calls++ })
		stopped := WatchDrain(context.Background(), draining, func() { calls += 100 })
		stopped() // stopped before the drain: never called
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		WatchDrain(ctx, draining, func() { calls += 1000 })()
		close(draining)
		synctest.Wait()
		stop()
		stop()
		if calls != 1 {
			t.Errorf("calls = %d, want only the live watcher's", calls)
		}
		WatchDrain(context.Background(), nil, func() { calls++ })()
	})
}
