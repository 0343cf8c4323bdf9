package door

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/coder/websocket"
)

// Conn is what a Writer writes to. *websocket.Conn is one; a door adapts anything else that
// carries messages (a WebRTC data channel, a conversation's transport).
type Conn interface {
	// Write sends one message; ctx bounds it.
	Write(ctx context.Context, typ websocket.MessageType, data []byte) error
	// Close ends the connection with a close frame (code and reason).
	Close(code websocket.StatusCode, reason string) error
}

// ErrSlowReader is what Writer.Run returns (wrapping the write's error) when one write took
// longer than the Writer's timeout while its context was alive: the client stopped reading.
var ErrSlowReader = errors.New("the client stopped reading: a write timed out")

// Message is one thing for a Writer to write.
type Message struct {
	Type websocket.MessageType // MessageText or MessageBinary
	// Data is the message. nil writes nothing: a barrier, whose Written is closed when the
	// writer reaches it (Flush).
	Data []byte
	// Written, when set, is closed once the writer has taken the message off the queue: written,
	// or dropped (a barrier, a stale message, a failed write).
	Written chan struct{}
	// Stale, when set, is asked just before the write: a stale message is dropped unwritten
	// (the audio of a piece the client cancelled while it waited in the queue).
	Stale func() bool
}

// item is one entry of a Writer's queue: a message, the close frame, or the end.
type item struct {
	msg    Message
	close  bool // write the close frame (code, reason) and stop
	end    bool // stop: nothing more is written
	code   websocket.StatusCode
	reason string
}

// WriterConfig configures a Writer; the zero value of each field is documented.
type WriterConfig struct {
	// Queue is how many messages may wait for the writer (0: 1). A sender finds it full while
	// the client reads slower than the door speaks; what it does then is its own policy (Send
	// waits, TrySend refuses).
	Queue int
	// Timeout bounds each write (0: only Run's context does): a write that takes longer ends
	// Run with ErrSlowReader.
	Timeout time.Duration
	// Done, when set, is called by the writer for each message it takes off the queue, written
	// (true) or not (stale, or its write failed), before the next: the door's accounting of
	// what it has queued (bytes of audio, a meter's seconds). Messages still queued when Run
	// returns are not taken.
	Done func(m Message, written bool)
}

// Writer is the one goroutine that writes a socket (Run); everything else hands it messages on a
// bounded queue, in order. Each write is bounded by a timeout, and the last thing written may be
// a close frame (code and reason). Send, TrySend, Close, Finish and Flush are safe from any
// goroutine; only Run writes to the Conn it is given.
type Writer struct {
	cfg     WriterConfig
	queue   chan item
	stopped chan struct{} // closed when Run returns: senders stop waiting for room
}

// NewWriter returns a writer; messages may be queued at once, and are written once its Run starts
// (on a goroutine the socket's owner waits for).
func NewWriter(cfg WriterConfig) *Writer {
	if cfg.Queue <= 0 {
		cfg.Queue = 1
	}
	return &Writer{cfg: cfg, queue: make(chan item, cfg.Queue), stopped: make(chan struct{})}
}

// Run writes what is queued to conn, in order, until ctx ends, a close frame is written (Close), the end
// is reached (Finish) or a write fails. It returns nil after a close frame or the end, ctx's
// error when ctx ended, and the write's error otherwise (wrapped in ErrSlowReader when the write
// ran past the timeout). Once it has returned, nothing more is written.
func (w *Writer) Run(ctx context.Context, conn Conn) error {
	defer close(w.stopped)
	for {
		var it item
		select {
		case <-ctx.Done():
			return ctx.Err()
		case it = <-w.queue:
		}
		switch {
		case it.end:
			return nil
		case it.close:
			conn.Close(it.code, it.reason)
			return nil
		}
		m := it.msg
		if m.Data == nil || (m.Stale != nil && m.Stale()) {
			w.taken(m, false)
			continue
		}
		if err := w.write(ctx, conn, m); err != nil {
			w.taken(m, false)
			return err
		}
		w.taken(m, true)
	}
}

// write writes one message within the timeout.
func (w *Writer) write(ctx context.Context, conn Conn, m Message) error {
	if w.cfg.Timeout <= 0 {
		return conn.Write(ctx, m.Type, m.Data)
	}
	wctx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
	defer cancel()
	err := conn.Write(wctx, m.Type, m.Data)
	if err != nil && ctx.Err() == nil && errors.Is(wctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w: %w", ErrSlowReader, err)
	}
	return err
}

// taken tells the door a message left the queue.
func (w *Writer) taken(m Message, written bool) {
	if w.cfg.Done != nil {
		w.cfg.Done(m, written)
	}
	if m.Written != nil {
		close(m.Written)
	}
}

// Send queues m, waiting while the queue is full; false when ctx ended or Run returned first
// (m was not queued).
func (w *Writer) Send(ctx context.Context, m Message) bool {
	return w.put(ctx, item{msg: m})
}

// TrySend queues m if there is room now; false when the queue is full or Run has returned.
func (w *Writer) TrySend(m Message) bool {
	select {
	case <-w.stopped:
		return false
	default:
	}
	select {
	case w.queue <- item{msg: m}:
		return true
	default:
		return false
	}
}

// Close queues the close frame: once everything before it is written, Run closes the Conn with
// code and reason and returns. False when ctx ended or Run returned first.
func (w *Writer) Close(ctx context.Context, code websocket.StatusCode, reason string) bool {
	return w.put(ctx, item{close: true, code: code, reason: reason})
}

// Finish queues the end: once everything before it is written, Run returns (the Conn is left
// open for its owner). False when ctx ended or Run returned first.
func (w *Writer) Finish(ctx context.Context) bool {
	return w.put(ctx, item{end: true})
}

// Flush waits until everything queued before it has been written (or dropped); false when ctx
// ended or Run returned first.
func (w *Writer) Flush(ctx context.Context) bool {
	written := make(chan struct{})
	if !w.Send(ctx, Message{Written: written}) {
		return false
	}
	select {
	case <-written:
		return true
	case <-ctx.Done():
	case <-w.stopped:
	}
	return false
}

// Len is how many things wait in the queue.
func (w *Writer) Len() int { return len(w.queue) }

// Stopped is closed when Run has returned.
func (w *Writer) Stopped() <-chan struct{} { return w.stopped }

func (w *Writer) put(ctx context.Context, it item) bool {
	select {
	case <-w.stopped:
		return false
	default:
	}
	select {
	case w.queue <- it:
		return true
	case <-ctx.Done():
	case <-w.stopped:
	}
	return false
}
