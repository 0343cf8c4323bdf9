package speechdoor

import (
	"context"
	"time"
)

// DefaultSocketIdle closes a raw-door socket (/v1/transcribe, /v1/synthesize, /v1/speak/stream)
// that sent nothing for this long while the door had nothing in flight for it (Config.SocketIdle,
// --speech-idle-timeout). Without it a silent socket held a speech-session slot for ever: 128
// leaked sockets closed the raw doors to everyone.
const DefaultSocketIdle = 60 * time.Second

// idleWatch is a socket's idle timer: the socket's read loop (and its workers, when they finish
// something) poke it; when idle passes without a poke and busy reports nothing in flight, onIdle
// is asked to close the socket.
type idleWatch struct {
	idle     time.Duration
	activity chan struct{} // capacity 1: "something happened"
	busy     func() bool   // work in flight (a piece being spoken, a final being decoded): not idle
}

func newIdleWatch(idle time.Duration, busy func() bool) *idleWatch {
	if idle <= 0 {
		idle = DefaultSocketIdle
	}
	return &idleWatch{idle: idle, activity: make(chan struct{}, 1), busy: busy}
}

// poke restarts the idle period.
func (w *idleWatch) poke() {
	select {
	case w.activity <- struct{}{}:
	default:
	}
}

// run waits for an idle period; then onIdle closes the socket and reports true, or reports false
// when the socket turned out busy after all (the period starts again). run returns after onIdle
// closed it, or when ctx is done or stop is closed.
func (w *idleWatch) run(ctx context.Context, stop <-chan struct{}, onIdle func() bool) {
	t := time.NewTimer(w.idle)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-stop:
			return
		case <-w.activity:
			t.Reset(w.idle)
		case <-t.C:
			if (w.busy != nil && w.busy()) || !onIdle() {
				t.Reset(w.idle)
				continue
			}
			return
		}
	}
}
