package session

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/voiced/voiced/door"
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

// outbox is the queue to the writer goroutine (a door.Writer). send and closeWith are safe from
// any goroutine; writeLoop runs the writer, the only caller of Transport.Send and Transport.Close
// while it runs. Its fields but the queue's are set by newConversation and open (ctx and cancel,
// the conversation's, by run before the writer starts) and only read after: the writer ends the
// conversation (cancel) when the transport fails or a close was written.
type outbox struct {
	ctx    context.Context
	cancel context.CancelFunc
	t      Transport
	enc    *wire.Encoder // its dialect is an atomic: set by the input goroutine, read by senders
	log    *slog.Logger

	conn   transportConn // what the writer writes
	w      *door.Writer
	closed atomic.Bool            // a close has been queued; further events are dropped
	reason atomic.Pointer[string] // the close's reason (the session's usage record, usage_record.go)

	queue sync.Mutex
	// queued is the bytes of the events handed to the writer and not yet written (outQueueBytes);
	// drained is closed, and replaced, each time the writer takes one. Under queue.
	queued  int
	drained chan struct{}
}

// open makes the writer of o.t: outQueue events, each write bounded by slowClientTimeout (a write
// stuck that long means the client stopped reading — bounded in the writer, not only in send:
// with fewer than outQueue events waiting no sender stalls, and a close (idle, drain) queued
// behind the stuck write would never be reached).
func (o *outbox) open() {
	o.conn = transportConn{o.t}
	o.w = door.NewWriter(door.WriterConfig{Queue: outQueue, Timeout: slowClientTimeout,
		Done: func(m door.Message, _ bool) { o.dequeued(len(m.Data)) }})
}

// writeLoop runs the writer on the session's context and ends the conversation when it stops: a
// close was written, the client stopped reading, or the transport failed.
func (o *outbox) writeLoop() {
	if err := o.w.Run(o.ctx, o.conn); errors.Is(err, door.ErrSlowReader) {
		o.log.Warn("realtime client stopped reading; closing", "queued", o.w.Len(), "waited", slowClientTimeout)
	}
	o.cancel()
}

// transportConn is a Transport as the writer sees it: an event is a text message, and the close
// frame's status is the End it stands for (End.status).
type transportConn struct{ t Transport }

func (tc transportConn) Write(ctx context.Context, _ websocket.MessageType, event []byte) error {
	return tc.t.Send(ctx, event)
}

func (tc transportConn) Close(code websocket.StatusCode, reason string) error {
	tc.t.Close(endOf(code), reason)
	return nil
}

// endStatus is the WebSocket close status of each End.
var endStatus = [...]websocket.StatusCode{
	EndNormal:      websocket.StatusNormalClosure,
	EndGoingAway:   websocket.StatusGoingAway,
	EndPolicy:      websocket.StatusPolicyViolation,
	EndServerError: websocket.StatusInternalError,
}

// status is e's WebSocket close status.
func (e End) status() websocket.StatusCode {
	if int(e) < len(endStatus) {
		return endStatus[e]
	}
	return websocket.StatusNormalClosure
}

// endOf is the End whose status is code (EndNormal for any other).
func endOf(code websocket.StatusCode) End {
	for e, s := range endStatus {
		if s == code {
			return End(e)
		}
	}
	return EndNormal
}

// send encodes ev and queues it for the writer; it blocks while the queue is full and gives up
// when the session ends. Safe from any goroutine. A reply's first audio delta after the user's
// turn ended observes the answer latency (answered).
func (c *conversation) send(ev wire.ServerEvent) {
	b := c.outbox.encodeEvent(ev)
	if b == nil {
		return
	}
	if _, audio := ev.(wire.ResponseAudioDelta); audio {
		c.answered()
	}
	c.outbox.enqueue(door.Message{Type: websocket.MessageText, Data: b})
}

// encodeEvent encodes ev for the writer: nil when nothing is to be sent (a close is queued, the
// dialect has no such event, or it could not be encoded: logged).
func (o *outbox) encodeEvent(ev wire.ServerEvent) []byte {
	if o.closed.Load() {
		return nil
	}
	b, err := o.enc.Encode(ev)
	if err != nil {
		o.log.Error("encode server event", "err", err)
		return nil
	}
	return b
}

// enqueue hands m to the writer: it waits while outQueueBytes are queued (the writer, which ends
// the conversation when one write takes slowClientTimeout, makes room), then while outQueue
// events are (for slowClientTimeout, then it ends the conversation). False when m was not queued.
func (o *outbox) enqueue(m door.Message) bool {
	for !o.makeRoom(len(m.Data)) {
		o.queue.Lock()
		drained := o.drained
		o.queue.Unlock()
		select {
		case <-drained:
		case <-o.ctx.Done():
			return false
		}
	}
	if o.w.TrySend(m) {
		return true
	}
	// The queue is full: the client reads slower than we speak. Wait a while, then end it.
	stall, cancel := context.WithTimeout(o.ctx, slowClientTimeout)
	defer cancel()
	if o.w.Send(stall, m) {
		return true
	}
	if o.ctx.Err() == nil && errors.Is(stall.Err(), context.DeadlineExceeded) {
		o.log.Warn("realtime client stopped reading; closing", "queued", o.w.Len(), "waited", slowClientTimeout)
		o.cancel()
	}
	o.dequeued(len(m.Data))
	return false
}

// makeRoom counts n bytes toward outQueueBytes: false when they do not fit (an empty queue takes
// anything).
func (o *outbox) makeRoom(n int) bool {
	o.queue.Lock()
	defer o.queue.Unlock()
	if o.drained == nil {
		o.drained = make(chan struct{})
	}
	if o.queued > 0 && o.queued+n > outQueueBytes {
		return false
	}
	o.queued += n
	return true
}

// dequeued gives back n bytes reserved, and wakes the senders waiting for room.
func (o *outbox) dequeued(n int) {
	o.queue.Lock()
	defer o.queue.Unlock()
	o.queued -= n
	if o.drained != nil {
		close(o.drained)
	}
	o.drained = make(chan struct{})
}

// sendWritten sends ev and waits until the writer has written it (or the session ends): for
// events that may be large (conversation.item.retrieved carries an item's audio, up to the
// conversation's bytes), so that a client asking for them faster than it reads holds one in the
// queue, not outQueue of them.
func (o *outbox) sendWritten(ev wire.ServerEvent) {
	b := o.encodeEvent(ev)
	if b == nil {
		return
	}
	m := door.Message{Type: websocket.MessageText, Data: b, Written: make(chan struct{})}
	if !o.enqueue(m) {
		return
	}
	select {
	case <-m.Written:
	case <-o.ctx.Done():
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
	c.outbox.close(end, reason)
}

// close queues the end of the conversation behind the events queued (end and reason go to the
// transport's Close); later sends are dropped.
func (o *outbox) close(end End, reason string) {
	if o.closed.Swap(true) {
		return
	}
	o.reason.Store(&reason)
	o.w.Close(o.ctx, end.status(), reason)
}
