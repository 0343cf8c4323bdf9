package session

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voiced/voiced/wire"
)

// stoppedReader is a transport whose client stops reading once stop is set, until release.
type stoppedReader struct {
	*fakeTransport
	stop    *atomic.Bool
	release chan struct{}
}

func (s stoppedReader) Send(ctx context.Context, event []byte) error {
	if s.stop.Load() {
		select {
		case <-s.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return s.fakeTransport.Send(ctx, event)
}

// TestOutboxBytesBounded: the writer's queue is bounded in bytes (outQueueBytes), not only in
// events. With 500 KiB of instructions and 500 KiB of tools set, each session.update of a few
// bytes is answered with ~1 MiB; while the client reads nothing, the input goroutine takes in
// only as many as fit in outQueueBytes (and the one it waits to queue). Before, all 100 were
// taken in and their answers queued (outQueue of them: 256 MiB).
func TestOutboxBytesBounded(t *testing.T) {
	leakCheck(t)
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	tr := stoppedReader{fakeTransport: newFakeTransport(t, Media{}), stop: new(atomic.Bool), release: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Converse(context.Background(), tr, Grant{Principal: Principal{Subject: "outbox-test"}}, wire.GA, "m")
	}()
	defer func() {
		close(tr.release)
		close(tr.in)
		<-done
	}()
	tr.until("session.created")
	var tools []any
	for i := range 100 {
		tools = append(tools, map[string]any{"type": "function", "name": fmt.Sprint("tool_", i), "description": strings.Repeat("d", 5000)})
	}
	tr.event(map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime",
		"instructions": strings.Repeat("i", 500<<10), "tools": tools}})
	tr.until("session.updated")
	tr.stop.Store(true)
	taken := 0
	for i := range 100 {
		select {
		case tr.in <- Inbound{Event: fmt.Appendf(nil, `{"type":"session.update","event_id":"evt_%d","session":{"type":"realtime"}}`, i)}:
			taken++
			continue
		case <-time.After(300 * time.Millisecond):
		}
		break
	}
	t.Logf("%d of 100 session.updates (~1 MiB answers) taken in while the client read nothing", taken)
	if want := outQueueBytes>>20 + 2; taken > want {
		t.Errorf("%d taken in while the client read nothing, want at most %d: their answers wait in the queue", taken, want)
	}
}
