package session

import (
	"fmt"
	"sync"
	"time"

	"github.com/voiced/voiced/wire"
)

// replies is which responses run, under its own lock: the conversation's (active) and the
// out-of-band ones. The input goroutine admits and cancels them, each reply's worker ends its
// own (end), the drain watcher and the idle timer read them. idle is set once by run before the
// input loop; its callback reads it under mu.
type replies struct {
	mu        sync.Mutex
	active    *reply
	outOfBand map[string]*reply // running out-of-band responses by id
	idle      *time.Timer
	// idleAt is when the conversation becomes idle, pushed back by each client event and each
	// reply's end: the timer's callback may already be running when one pushes it (a fired timer
	// is re-armed by Reset, but its callback still runs), so the callback checks it under mu.
	idleAt time.Time
}

// admit registers r as running: refused when another response already writes the conversation
// (an out-of-band one: when maxOutOfBand already run). A cancelled reply still finishing hands
// on its done, which the new one waits for (r.prev).
func (rs *replies) admit(r *reply, eventID string) *wire.Error {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if r.outOfBand {
		if len(rs.outOfBand) >= maxOutOfBand {
			return &wire.Error{Type: wire.TypeInvalidRequest, Code: codeTooManyResponses, EventID: eventID,
				Message: fmt.Sprintf("This conversation already runs %d out-of-band responses (conversation 'none'), the most it may: wait for one to finish.", maxOutOfBand)}
		}
		if rs.outOfBand == nil {
			rs.outOfBand = map[string]*reply{}
		}
		rs.outOfBand[r.id] = r
		return nil
	}
	if a := rs.active; a != nil {
		if !a.cancelled && !a.ending {
			return wire.ErrActiveResponse(a.id, eventID)
		}
		r.prev = a.done // cancelled, or past its MCP items, finishing its done events: the new reply waits for them
	}
	rs.active = r
	return nil
}

// ending marks r as sending its last events (reply.ending).
func (rs *replies) ending(r *reply) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r.ending = true
}

// cancel cancels the active response (id "" = whichever) or the out-of-band one id names;
// false when there is none to cancel.
func (rs *replies) cancel(id string, cause error) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	a := rs.active
	if id != "" && rs.outOfBand[id] != nil {
		a = rs.outOfBand[id]
	}
	if a == nil || a.cancelled || (id != "" && id != a.id) {
		return false
	}
	a.cancelled = true
	a.cancel(cause)
	return true
}

// answering: a reply writes the conversation (cancelled or not).
func (rs *replies) answering() bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.active != nil
}

// answeringLive: a reply writes the conversation and was not cancelled.
func (rs *replies) answeringLive() bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.active != nil && !rs.active.cancelled
}

// running is every reply running, the conversation's and the out-of-band ones.
func (rs *replies) running() []*reply {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var running []*reply
	if rs.active != nil {
		running = append(running, rs.active)
	}
	for _, r := range rs.outOfBand {
		running = append(running, r)
	}
	return running
}

// startIdle starts the idle timer: after timeout with no client event (touchIdle) and no reply
// running it calls onIdle; while one runs it waits another timeout.
func (rs *replies) startIdle(timeout time.Duration, onIdle func()) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.idleAt = time.Now().Add(timeout)
	rs.idle = time.AfterFunc(timeout, func() {
		// A client listening to a long reply sends nothing: idle counts only while no reply runs
		// (out-of-band ones included).
		rs.mu.Lock()
		busy := rs.active != nil || len(rs.outOfBand) > 0
		if busy {
			rs.idleAt = time.Now().Add(timeout)
		}
		early := time.Until(rs.idleAt)
		if early > 0 {
			rs.idle.Reset(early)
		}
		rs.mu.Unlock()
		if early <= 0 {
			onIdle()
		}
	})
}

// touchIdle restarts the idle clock (timeout from now): a client event arrived.
func (rs *replies) touchIdle(timeout time.Duration) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.idleAt = time.Now().Add(timeout)
	rs.idle.Reset(timeout)
}

// end forgets r, which has sent its response.done, and restarts the idle timer (timeout).
func (rs *replies) end(r *reply, timeout time.Duration) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.active == r {
		rs.active = nil
	}
	delete(rs.outOfBand, r.id)
	if rs.idle != nil {
		// Idle counts from the end of the reply the client was listening to, not from a timer
		// that happened to be running through it (which could close before response.done).
		rs.idleAt = time.Now().Add(timeout)
		rs.idle.Reset(timeout)
	}
}
