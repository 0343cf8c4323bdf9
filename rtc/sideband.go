package rtc

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/coder/websocket"

	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/session"
)

// sidebandQueue bounds the events waiting for a sideband socket's writer; a sideband that falls
// this far behind is closed (it must not slow the call).
const sidebandQueue = 256

// ErrTooManySidebands refuses a sideband socket on a call that MaxSidebands already watch.
var ErrTooManySidebands = &door.Refusal{Status: http.StatusTooManyRequests, Name: "too_many_sidebands",
	Message: fmt.Sprintf("this call already has %d sideband sockets, the most it takes; close one first", MaxSidebands)}

// errSidebandSlow closes a sideband socket that stopped reading.
var errSidebandSlow = errors.New("sideband socket fell behind")

// ServeSideband is WS /v1/realtime?call_id=…: a server's control socket on a running call (OpenAI's
// sideband connection, with a server credential — the route is wrapped with the service token). It
// sees every server event the call is sent, and the client events it sends go to the call's
// conversation as if they came on its data channel (a response.create is spoken on the call's
// track; a tool's function_call_output answers the call's tool call). It ends when the call does.
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
	// The tap is taken before the upgrade, so a call over MaxSidebands is refused by name.
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(r.Context()))
	defer cancel(nil)
	out := make(chan []byte, sidebandQueue)
	untap, ok := t.Tap(func(ev []byte) {
		select {
		case out <- ev:
		default:
			cancel(errSidebandSlow)
		}
	})
	if !ok {
		s.Sessions.Refuse(w, ErrTooManySidebands)
		return
	}
	defer untap()
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"realtime"}, InsecureSkipVerify: true})
	if err != nil {
		return // Accept answered
	}
	conn.SetReadLimit(-1)
	writerDone := make(chan struct{})
	go func() { // the one writer of this socket; the handler waits for it
		defer close(writerDone)
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.Call().Done():
				cancel(nil)
				return
			case ev := <-out:
				if conn.Write(ctx, websocket.MessageText, ev) != nil {
					cancel(nil)
					return
				}
			}
		}
	}()
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
	<-writerDone
	status := websocket.StatusNormalClosure
	if errors.Is(context.Cause(ctx), errSidebandSlow) {
		status = websocket.StatusPolicyViolation
	}
	conn.Close(status, "")
}
