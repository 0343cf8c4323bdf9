package session

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voiced/voiced/internal/testkit"
	"github.com/voiced/voiced/wire"
)

// stallingReader is a transport whose client stops reading at the first event stall says so,
// until the test ends.
type stallingReader struct {
	*fakeTransport
	stall   func(event []byte) bool
	release chan struct{}
}

func (s stallingReader) Send(ctx context.Context, event []byte) error {
	if s.stall(event) {
		select {
		case <-s.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return s.fakeTransport.Send(ctx, event)
}

// converseStalling starts a conversation (GA) on a stallingReader and waits for session.created;
// the conversation ends with the test.
func converseStalling(t *testing.T, stall func(event []byte) bool) stallingReader {
	testkit.CheckLeaks(t)
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	tr := stallingReader{fakeTransport: newFakeTransport(t, Media{}), stall: stall, release: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Converse(context.Background(), tr, Grant{Principal: Principal{Subject: "stall-test"}}, wire.GA, "m")
	}()
	t.Cleanup(func() {
		close(tr.release)
		close(tr.in)
		<-done
	})
	tr.until("session.created")
	return tr
}

// takenIn hands the conversation up to 100 events (event(i)) and counts those its input goroutine
// took in before it stopped taking them for 300 ms.
func (s stallingReader) takenIn(event func(i int) []byte) int {
	taken := 0
	for i := range 100 {
		select {
		case s.in <- Inbound{Event: event(i)}:
			taken++
			continue
		case <-time.After(300 * time.Millisecond):
		}
		break
	}
	return taken
}

// TestOutboxBytesBounded: the writer's queue is bounded in bytes (outQueueBytes), not only in
// events. With 500 KiB of instructions and 500 KiB of tools set, each session.update of a few
// bytes is answered with ~1 MiB; while the client reads nothing, the input goroutine takes in
// only as many as fit in outQueueBytes (and the one it waits to queue). Before, all 100 were
// taken in and their answers queued (outQueue of them: 256 MiB).
func TestOutboxBytesBounded(t *testing.T) {
	stop := new(atomic.Bool)
	tr := converseStalling(t, func([]byte) bool { return stop.Load() })
	var tools []any
	for i := range 100 {
		tools = append(tools, map[string]any{"type": "function", "name": fmt.Sprint("tool_", i), "description": strings.Repeat("d", 5000)})
	}
	tr.event(map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime",
		"instructions": strings.Repeat("i", 500<<10), "tools": tools}})
	tr.until("session.updated")
	stop.Store(true)
	taken := tr.takenIn(func(i int) []byte {
		return fmt.Appendf(nil, `{"type":"session.update","event_id":"evt_%d","session":{"type":"realtime"}}`, i)
	})
	t.Logf("%d of 100 session.updates (~1 MiB answers) taken in while the client read nothing", taken)
	if want := outQueueBytes>>20 + 2; taken > want {
		t.Errorf("%d taken in while the client read nothing, want at most %d: their answers wait in the queue", taken, want)
	}
}

// TestEndStatus: each End is written as its own WebSocket close status, and the writer's close
// frame (a status) reaches the transport as the End it stands for.
func TestEndStatus(t *testing.T) {
	for end, want := range map[End]websocket.StatusCode{
		EndNormal:      websocket.StatusNormalClosure,
		EndGoingAway:   websocket.StatusGoingAway,
		EndPolicy:      websocket.StatusPolicyViolation,
		EndServerError: websocket.StatusInternalError,
	} {
		if got := end.status(); got != want {
			t.Errorf("End %d: status %v, want %v", end, got, want)
		}
		if got := endOf(want); got != end {
			t.Errorf("endOf(%v) = %d, want %d", want, got, end)
		}
	}
	if got := endOf(websocket.StatusMessageTooBig); got != EndNormal {
		t.Errorf("endOf(1009) = %d, want EndNormal", got)
	}
}
