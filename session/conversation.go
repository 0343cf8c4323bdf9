package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/voiced/voiced/speechcore/audio"
	"github.com/voiced/voiced/wire"
)

// outQueue bounds the events waiting for the writer: a slow reader slows the session (the
// senders block), it is never buffered without bound.
const outQueue = 256

// slowClientTimeout is how long a full queue may stay full before the conversation is ended.
const slowClientTimeout = 10 * time.Second

var (
	errIdle    = errors.New("session idle")
	errLimit   = errors.New("session limit reached")
	errCleanup = errors.New("conversation ended")
)

// frame is one thing for the writer: a text frame, or a close.
type frame struct {
	data        []byte
	closeStatus websocket.StatusCode
	closeReason string
}

// conversation is one realtime socket. The read loop (run) owns it: it starts the writer, the
// meter flusher, transcription and reply workers, and on exit cancels and waits for them.
type conversation struct {
	srv     *Server
	log     *slog.Logger
	conn    *websocket.Conn
	grant   Grant
	enc     *wire.Encoder
	convID  string
	engines Engines

	ctx    context.Context // the session's: nothing cancels it but the end of the conversation
	cancel context.CancelFunc
	out    chan frame     // to the writer
	work   sync.WaitGroup // transcription and reply workers
	closed atomic.Bool    // a close has been queued; further frames are dropped

	// Owned by the read loop.
	dialect     wire.Dialect
	sessionSeen bool // a session.update decided the dialect
	sess        wire.Session
	input       inputBuffer
	floor       Floor
	floorBase   int64 // timeline sample (16 kHz) of the floor's first push
	squelch     Squelch
	speechItem  string // the user item named by speech_started, until committed
	partials    partials

	// Shared with workers, under mu.
	mu        sync.Mutex
	items     []*entry
	active    *reply
	outOfBand map[string]*reply // running out-of-band responses by id
	idle      *time.Timer       // set once under mu before the read loop runs; its callback reads it under mu

	budgetLimited atomic.Bool
	budgetLeft    atomic.Int64 // nanoseconds the principal may still use (when limited)
	heardSamples  atomic.Int64 // 16 kHz samples past the squelch, not yet metered
	heardForReply atomic.Int64 // 16 kHz samples past the squelch since the last response.done
	spokenSamples atomic.Int64 // 24 kHz samples sent, not yet metered
	meterKick     chan struct{}
	// answerSince is when the user's speech ended (unix ns) while the turn detector's reply has
	// not yet sent audio; 0 otherwise. The first audio delta after it observes the answer latency.
	answerSince atomic.Int64
	// assistantAudio: the conversation holds assistant audio (a reply spoke into it), so its voice
	// is fixed, as OpenAI's is.
	assistantAudio atomic.Bool
}

func newConversation(s *Server, conn *websocket.Conn, g Grant, d wire.Dialect, model string) *conversation {
	c := &conversation{
		srv: s, log: s.log, conn: conn, grant: g, engines: s.cfg.Engines.timed(s.metrics),
		enc: wire.NewEncoder(d), dialect: d, convID: wire.NewID("conv_"),
		out: make(chan frame, outQueue), meterKick: make(chan struct{}, 1),
		sess: wire.NewSession(wire.NewID("sess_"), model),
	}
	if model == "" {
		c.sess.Model = "voiced"
	}
	return c
}

// run is the read loop. It returns when the client closes, the session ends, or ctx is done.
func (c *conversation) run(parent context.Context) {
	c.ctx, c.cancel = context.WithCancel(parent)
	var writer, meter sync.WaitGroup
	writer.Go(c.writeLoop)
	meter.Go(c.meterLoop)
	if t := c.srv.cfg.Sockets; t != nil {
		meter.Go(func() { c.drainOn(t.Draining()) })
	}
	defer func() {
		c.cancel() // replies and transcriptions stop; the writer ends
		c.work.Wait()
		writer.Wait()
		meter.Wait()
		// A reply worker can count its last samples after the meter loop's final flush: hand
		// them on now that every worker has returned (the meter writes them within a second,
		// and at shutdown its Close flushes after every conversation has drained).
		last, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		c.flushMeter(last, false)
		cancel()
		c.conn.Close(websocket.StatusNormalClosure, "")
		if c.floor != nil {
			c.floor.Close()
		}
		if cl, ok := c.squelch.(io.Closer); ok {
			cl.Close()
		}
	}()

	c.refreshBudget(c.ctx)
	if err := c.start(); err != nil {
		c.fail(err)
		return
	}
	idleTimeout := c.srv.cfg.IdleTimeout
	c.mu.Lock()
	c.idle = time.AfterFunc(idleTimeout, func() {
		// A client listening to a long reply sends nothing: idle counts only while no reply runs
		// (out-of-band ones included).
		c.mu.Lock()
		busy := c.active != nil || len(c.outOfBand) > 0
		if busy {
			c.idle.Reset(idleTimeout)
		}
		c.mu.Unlock()
		if !busy {
			c.closeWith(wire.ErrSessionIdle(idleTimeout.String()), websocket.StatusGoingAway, "idle")
		}
	})
	c.mu.Unlock()
	defer c.idle.Stop()

	for {
		typ, data, err := c.readFrame()
		if errors.Is(err, errFrameTooBig) {
			c.send(wire.ErrInvalidValue("audio", "", "Invalid event: a client event may be at most %d MiB (an append carries at most 15 MiB of audio).", ReadLimit>>20))
			continue
		}
		if err != nil {
			if websocket.CloseStatus(err) == -1 && c.ctx.Err() == nil && !c.closed.Load() {
				c.log.Debug("realtime read ended", "err", err)
			}
			return
		}
		c.idle.Reset(idleTimeout)
		if c.closed.Load() {
			return
		}
		if typ != websocket.MessageText {
			c.send(wire.ErrInvalidEvent("", "Binary frames are not accepted: send JSON events in text frames."))
			continue
		}
		ev, err := wire.Decode(data, c.dialect)
		data = nil
		if err != nil {
			c.sendError(err)
			continue
		}
		c.handle(ev)
	}
}

var errFrameTooBig = errors.New("client frame over the read limit")

// readFrame reads one message: over ReadLimit it is discarded and errFrameTooBig returned (the
// session stays open); over HardReadLimit the socket closes (1009).
func (c *conversation) readFrame() (websocket.MessageType, []byte, error) {
	typ, r, err := c.conn.Reader(c.ctx)
	if err != nil {
		return 0, nil, err
	}
	data, err := io.ReadAll(io.LimitReader(r, ReadLimit+1))
	if err != nil {
		return 0, nil, err
	}
	if len(data) > ReadLimit {
		if _, err := io.Copy(io.Discard, r); err != nil {
			return 0, nil, err
		}
		return typ, nil, errFrameTooBig
	}
	return typ, data, nil
}

// start sends session.created, with the ticket's session config applied first.
func (c *conversation) start() error {
	if len(c.grant.Session) > 0 && string(c.grant.Session) != "null" {
		if err := applySessionObject(&c.sess, c.grant.Session, c.dialect); err != nil {
			return err
		}
	}
	if err := c.configure(); err != nil {
		return err
	}
	c.send(wire.SessionCreated{Session: c.sess})
	return nil
}

// configure (re)builds what depends on the session config: the input converter, the floor and
// the squelch.
func (c *conversation) configure() error {
	if err := c.input.setFormat(c.sess.InputFormat); err != nil {
		return err
	}
	if c.floor != nil {
		c.floor.Close()
		c.floor = nil
	}
	c.partials.reset()
	if c.sess.TurnDetection.Type != wire.TurnNone && c.engines.NewFloor != nil {
		f, err := c.engines.NewFloor(c.sess.TurnDetection, c.partials.Partial)
		if err != nil {
			return fmt.Errorf("turn detection: %w", err)
		}
		c.floor = f
		c.floorBase = c.input.timeline
	}
	if c.squelch == nil && c.engines.NewSquelch != nil {
		q, err := c.engines.NewSquelch()
		if err != nil {
			return fmt.Errorf("squelch: %w", err)
		}
		c.squelch = q
	}
	return nil
}

// fail reports a server failure and closes.
func (c *conversation) fail(err error) {
	c.log.Error("realtime conversation failed", "err", err)
	var we *wire.Error
	if !errors.As(err, &we) {
		we = wire.ErrServer("the conversation could not start: see the server log", "")
	}
	c.closeWith(we, websocket.StatusInternalError, "server error")
}

// drainOn closes the conversation when the server drains: the reply in flight finishes first.
func (c *conversation) drainOn(draining <-chan struct{}) {
	select {
	case <-draining:
	case <-c.ctx.Done():
		return
	}
	c.mu.Lock()
	active := c.active
	c.mu.Unlock()
	if active != nil {
		select {
		case <-active.done:
		case <-c.ctx.Done():
			return
		}
	}
	c.closeWith(&wire.Error{Type: wire.TypeServer, Code: codeShuttingDown, Message: "The server is shutting down."},
		websocket.StatusGoingAway, "server shutting down")
}

// ---- the writer ----

// writeLoop is the only goroutine that writes the socket, on the session's context.
func (c *conversation) writeLoop() {
	for {
		select {
		case <-c.ctx.Done():
			return
		case f := <-c.out:
			if f.data == nil {
				c.conn.Close(f.closeStatus, f.closeReason)
				c.cancel()
				return
			}
			// A write stuck this long: the client stopped reading. Bounded here too, not only
			// in send: with fewer than outQueue events waiting no sender stalls, and a close
			// (idle, drain) queued behind the stuck write would never be reached.
			wctx, done := context.WithTimeout(c.ctx, slowClientTimeout)
			err := c.conn.Write(wctx, websocket.MessageText, f.data)
			done()
			if err != nil {
				c.cancel()
				return
			}
		}
	}
}

// send encodes ev and queues it for the writer; it blocks while the queue is full and gives up
// when the session ends. Safe from any goroutine.
func (c *conversation) send(ev wire.ServerEvent) {
	if c.closed.Load() {
		return
	}
	b, err := c.enc.Encode(ev)
	if err != nil {
		c.log.Error("encode server event", "err", err)
		return
	}
	if b == nil {
		return // the dialect has no such event
	}
	if _, audio := ev.(wire.ResponseAudioDelta); audio {
		if since := c.answerSince.Swap(0); since != 0 {
			c.srv.metrics.answer.Observe(time.Since(time.Unix(0, since)).Seconds())
		}
	}
	select {
	case c.out <- frame{data: b}:
		return
	default:
	}
	// The queue is full: the client reads slower than we speak. Wait a while, then end it.
	stall := time.NewTimer(slowClientTimeout)
	defer stall.Stop()
	select {
	case c.out <- frame{data: b}:
	case <-c.ctx.Done():
	case <-stall.C:
		c.log.Warn("realtime client stopped reading; closing", "queued", len(c.out), "waited", slowClientTimeout)
		c.cancel()
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

// closeWith sends an error event, then closes the socket with status; later sends are dropped.
func (c *conversation) closeWith(we *wire.Error, status websocket.StatusCode, reason string) {
	c.send(we)
	if c.closed.Swap(true) {
		return
	}
	select {
	case c.out <- frame{closeStatus: status, closeReason: reason}:
	case <-c.ctx.Done():
	}
}

// ---- metering ----

// meterLoop hands heard and spoken seconds to the meter every second and at each turn end.
func (c *conversation) meterLoop() {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-c.ctx.Done():
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			c.flushMeter(ctx, true)
			cancel()
			return
		case <-tick.C:
			c.flushMeter(c.ctx, false)
		case <-c.meterKick:
			c.flushMeter(c.ctx, true)
		}
	}
}

func (c *conversation) flushMeter(ctx context.Context, turnEnded bool) {
	heard := c.heardSamples.Swap(0)
	spoken := c.spokenSamples.Swap(0)
	if c.engines.Meter == nil || (heard == 0 && spoken == 0 && !turnEnded) {
		return
	}
	u := Usage{Subject: c.grant.Principal.Subject, Org: c.grant.Principal.Org, TurnEnded: turnEnded,
		Heard: audio.Duration(int(heard), 16000), Spoken: audio.Duration(int(spoken), 24000)}
	if err := c.engines.Meter.Record(ctx, u); err != nil {
		c.log.Error("meter record failed", "err", err, "subject", u.Subject)
	}
	c.refreshBudget(ctx)
}

// refreshBudget asks the meter what the principal has left.
func (c *conversation) refreshBudget(ctx context.Context) {
	if c.engines.Budget == nil || c.ctx.Err() != nil {
		return
	}
	left, limited, err := c.engines.Budget(ctx, c.grant.Principal)
	if err != nil {
		c.log.Error("quota check failed", "err", err, "subject", c.grant.Principal.Subject)
		return
	}
	c.budgetLeft.Store(int64(left))
	c.budgetLimited.Store(limited)
}

// spend counts d against the principal's budget; false when it is used up (the conversation is
// then being closed with insufficient_quota).
func (c *conversation) spend(d time.Duration) bool {
	if !c.budgetLimited.Load() {
		return true
	}
	if c.budgetLeft.Add(-int64(d)) > 0 {
		return true
	}
	c.cancelReply("", errQuota)
	if !c.closed.Load() {
		c.closeWith(&wire.Error{Type: codeQuota, Code: codeQuota,
			Message: "This principal has used its speech seconds for today."}, websocket.StatusPolicyViolation, "quota exceeded")
	}
	return false
}

// turnEnded asks the meter loop to record now.
func (c *conversation) turnEnded() {
	select {
	case c.meterKick <- struct{}{}:
	default:
	}
}

// partials keeps the latest partial transcript of the turn in progress for semantic_vad: the read
// loop starts a decode of the open turn's audio on a worker each time half a second more has
// arrived and none is running; Partial returns whatever text is in hand, at once.
type partials struct {
	text    atomic.Pointer[string]
	busy    atomic.Bool
	gen     atomic.Int64 // bumped by reset: a decode started before it is dropped
	decoded int          // samples of the turn the last decode started with (read loop)
}

// partialCadence is the new audio (16 kHz samples) that starts another partial decode.
const partialCadence = hearRate / 2

// Partial returns the latest partial transcript ("" when none yet).
func (p *partials) Partial() string {
	if t := p.text.Load(); t != nil {
		return *t
	}
	return ""
}

func (p *partials) reset() {
	p.gen.Add(1)
	p.text.Store(nil)
	p.decoded = 0
}

func (p *partials) maybeDecode(c *conversation, pcm []float32) {
	if c.engines.Ears == nil || len(pcm)-p.decoded < partialCadence || !p.busy.CompareAndSwap(false, true) {
		return
	}
	p.decoded = len(pcm)
	snapshot := append([]float32(nil), pcm[max(0, len(pcm)-30*hearRate):]...)
	gen := p.gen.Load()
	c.work.Go(func() {
		defer p.busy.Store(false)
		text, err := c.engines.Ears.Transcribe(c.ctx, snapshot)
		if err == nil && p.gen.Load() == gen {
			p.text.Store(&text)
		}
	})
}
