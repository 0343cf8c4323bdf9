package rtc

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/coder/websocket"

	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/session"
)

// sidebandQueue bounds the events waiting for a sideband socket's writer; a sideband that falls
// this far behind is closed (it must not slow the call).
const sidebandQueue = 256

// ErrTooManySidebands refuses a sideband socket on a call that MaxSidebands already watch.
var ErrTooManySidebands = door.NewRefusal(http.StatusTooManyRequests, "too_many_sidebands",
	fmt.Sprintf("this call already has %d sideband sockets, the most it takes; close one first", MaxSidebands))

// errSidebandSlow is why a sideband socket that stopped reading is closed (1008): an event found
// its writer's queue full.
var errSidebandSlow = errors.New("sideband socket fell behind")

// ServeSideband is WS /v1/realtime?call_id=…: a server's control socket on a running call (OpenAI's
// sideband connection, with a server credential — the route is wrapped with the service token). It
// sees every server event the call is sent, and the client events it sends go to the call's
// conversation as if they came on its data channel (a response.create is spoken on the call's
// track; a tool's function_call_output answers the call's tool call). It opens through the
// conversations' door kit (the origin policy, the shutdown registry) and ends when the call does.
func (s *Signal) ServeSideband(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("call_id")
	if s.forwarded(w, r, id) { // the upgrade too: the owner's answer is relayed, then the socket
		return
	}
	s.mu.Lock()
	t := s.calls[id]
	s.mu.Unlock()
	if t == nil {
		s.Sessions.Refuse(w, ErrCallNotFound)
		return
	}
	// The tap is taken before the upgrade (the kit's admission), so a call over MaxSidebands is
	// refused by name; an event that finds the writer's queue full closes the socket 1008.
	out := door.NewWriter(door.WriterConfig{Queue: sidebandQueue})
	fellBehind := make(chan struct{})
	var behind sync.Once
	tap := func() (release func(), err error) {
		untap, ok := t.Tap(func(ev []byte) {
			if !out.TrySend(door.Message{Type: websocket.MessageText, Data: ev}) {
				behind.Do(func() { close(fellBehind) })
			}
		})
		if !ok {
			return nil, ErrTooManySidebands
		}
		return untap, nil
	}
	kctx, conn, done, ok := s.Sessions.Kit().Upgrade(w, r, tap, &websocket.AcceptOptions{Subprotocols: []string{"realtime"}})
	if !ok {
		return // refused by name (or Accept answered)
	}
	defer done()
	conn.SetReadLimit(-1)
	ctx, cancel := context.WithCancelCause(kctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	wg.Go(func() { // the one writer of this socket
		out.Run(ctx, conn)
		cancel(nil)
	})
	wg.Go(func() { // the sideband ends with the call, or when it fell behind
		select {
		case <-t.Call().Done():
			cancel(nil)
		case <-fellBehind:
			cancel(errSidebandSlow)
		case <-ctx.Done():
		}
	})
	for {
		typ, data, err := door.ReadFrame(ctx, conn, session.ReadLimit, 0)
		if errors.Is(err, door.ErrFrameTooLarge) || (err == nil && typ != websocket.MessageText) {
			continue // the call's engine would refuse it too; the sideband carries events only
		}
		if err != nil {
			break
		}
		t.Inject(data)
	}
	cancel(nil)
	wg.Wait()
	status := websocket.StatusNormalClosure
	if errors.Is(context.Cause(ctx), errSidebandSlow) {
		status = websocket.StatusPolicyViolation
	}
	conn.Close(status, "")
}
