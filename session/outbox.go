package session

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/voiced/voiced/wire"
)

// outQueue bounds the events waiting for the writer: a slow reader slows the session (the
// senders block), it is never buffered without bound.
const outQueue = 256

// outQueueBytes bounds the bytes of those events (an event larger than it waits for an empty
// queue and goes alone). A small client event may ask for a large one: with 512 KiB of
// instructions and 512 KiB of tools, each session.update of a few bytes is answered with ~1 MiB,
// and 256 of them queued for a client that reads nothing held 256 MiB. 4 MiB is about a minute of
// reply audio ahead of a client that reads (a 200 ms delta is ~13 KiB of base64 JSON).
const outQueueBytes = 4 << 20

// slowClientTimeout is how long a full queue may stay full before the conversation is ended.
const slowClientTimeout = 10 * time.Second

// frame is one thing for the writer: an encoded event, or the end.
type frame struct {
	data    []byte
	end     End
	reason  string
	written chan struct{} // closed by the writer once data is written (nil: nobody waits)
}

// outbox is the queue to the writer goroutine. send and closeWith are safe from any goroutine;
// writeLoop is the writer, the only caller of Transport.Send and Transport.Close while it runs.
type outbox struct {
	out    chan frame  // to the writer
	closed atomic.Bool // a close has been queued; further events are dropped

	queue sync.Mutex
	// queued is the bytes of the events handed to the writer and not yet written (outQueueBytes);
	// drained is closed, and replaced, each time the writer writes one. Under queue.
	queued  int
	drained chan struct{}
}

// writeLoop is the only goroutine that writes to the transport, on the session's context.
func (c *conversation) writeLoop() {
	for {
		select {
		case <-c.ctx.Done():
			return
		case f := <-c.out:
			if f.data == nil {
				c.t.Close(f.end, f.reason)
				c.cancel()
				return
			}
			// A write stuck this long: the client stopped reading. Bounded here too, not only
			// in send: with fewer than outQueue events waiting no sender stalls, and a close
			// (idle, drain) queued behind the stuck write would never be reached.
			wctx, done := context.WithTimeout(c.ctx, slowClientTimeout)
			err := c.t.Send(wctx, f.data)
			stuck := c.ctx.Err() == nil && errors.Is(wctx.Err(), context.DeadlineExceeded)
			done()
			c.dequeued(len(f.data))
			if err != nil {
				if stuck {
					c.log.Warn("realtime client stopped reading; closing", "queued", len(c.out), "waited", slowClientTimeout)
				}
				c.cancel()
				return
			}
			if f.written != nil {
				close(f.written)
			}
		}
	}
}

// send encodes ev and queues it for the writer; it blocks while the queue is full and gives up
// when the session ends. Safe from any goroutine.
func (c *conversation) send(ev wire.ServerEvent) {
	b := c.encodeEvent(ev)
	if b == nil {
		return
	}
	if _, audio := ev.(wire.ResponseAudioDelta); audio {
		c.answered()
	}
	c.enqueue(frame{data: b})
}

// encodeEvent encodes ev for the writer: nil when nothing is to be sent (a close is queued, the
// dialect has no such event, or it could not be encoded: logged).
func (c *conversation) encodeEvent(ev wire.ServerEvent) []byte {
	if c.closed.Load() {
		return nil
	}
	b, err := c.enc.Encode(ev)
	if err != nil {
		c.log.Error("encode server event", "err", err)
		return nil
	}
	return b
}

// enqueue hands f to the writer: it waits while outQueueBytes are queued (the writer, which ends
// the conversation when one write takes slowClientTimeout, makes room), then while outQueue
// events are (for slowClientTimeout, then it ends the conversation). False when f was not queued.
func (c *conversation) enqueue(f frame) bool {
	for !c.makeRoom(len(f.data)) {
		c.queue.Lock()
		drained := c.drained
		c.queue.Unlock()
		select {
		case <-drained:
		case <-c.ctx.Done():
			return false
		}
	}
	select {
	case c.out <- f:
		return true
	default:
	}
	// The queue is full: the client reads slower than we speak. Wait a while, then end it.
	stall := time.NewTimer(slowClientTimeout)
	defer stall.Stop()
	select {
	case c.out <- f:
		return true
	case <-c.ctx.Done():
	case <-stall.C:
		c.log.Warn("realtime client stopped reading; closing", "queued", len(c.out), "waited", slowClientTimeout)
		c.cancel()
	}
	c.dequeued(len(f.data))
	return false
}

// makeRoom counts n bytes toward outQueueBytes: false when they do not fit (an empty queue takes
// anything).
func (c *conversation) makeRoom(n int) bool {
	c.queue.Lock()
	defer c.queue.Unlock()
	if c.drained == nil {
		c.drained = make(chan struct{})
	}
	if c.queued > 0 && c.queued+n > outQueueBytes {
		return false
	}
	c.queued += n
	return true
}

// dequeued gives back n bytes reserved, and wakes the senders waiting for room.
func (c *conversation) dequeued(n int) {
	c.queue.Lock()
	defer c.queue.Unlock()
	c.queued -= n
	if c.drained != nil {
		close(c.drained)
	}
	c.drained = make(chan struct{})
}

// sendWritten sends ev and waits until the writer has written it (or the session ends): for
// events that may be large (conversation.item.retrieved carries an item's audio, up to the
// conversation's bytes), so that a client asking for them faster than it reads holds one in the
// queue, not outQueue of them.
func (c *conversation) sendWritten(ev wire.ServerEvent) {
	b := c.encodeEvent(ev)
	if b == nil {
		return
	}
	f := frame{data: b, written: make(chan struct{})}
	if !c.enqueue(f) {
		return
	}
	select {
	case <-f.written:
	case <-c.ctx.Done():
	}
}

// answered observes the answer latency at a reply's first audio after the user's turn ended.
func (c *conversation) answered() {
	if since := c.turns.answerSince.Swap(0); since != 0 {
		c.srv.metrics.answer.Observe(time.Since(time.Unix(0, since)).Seconds())
	}
}

// sendError sends err as an error event (a *wire.Error as is; anything else as server_error).
func (c *conversation) sendError(err error) {
	var we *wire.Error
	if !errors.As(err, &we) {
		c.log.Error("realtime event failed", "err", err)
		we = wire.ErrServer("the server failed this event: see its log", "")
	}
	c.send(we)
}

// closeWith sends an error event, then ends the conversation (end and reason go to the
// transport's Close); later sends are dropped.
func (c *conversation) closeWith(we *wire.Error, end End, reason string) {
	c.send(we)
	if c.closed.Swap(true) {
		return
	}
	select {
	case c.out <- frame{end: end, reason: reason}:
	case <-c.ctx.Done():
	}
}
