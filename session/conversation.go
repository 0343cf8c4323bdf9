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

	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/turn"
	"github.com/voiced/voiced/wire"
)

var (
	errIdle    = errors.New("session idle")
	errLimit   = errors.New("session limit reached")
	errCleanup = errors.New("conversation ended")
)

// conversation is the engine of one realtime conversation, whatever carries it (Transport). Its
// own fields are set by newConversation (ctx and cancel by run, before any other goroutine
// starts) and only read after, by any goroutine; the rest is in parts, each stating its owner:
//
//   - in (inputSide): the input goroutine (run) only: the session config, the input pipeline
//     (buffer, turn detector, squelch), the turn in progress.
//   - outbox: the queue to the writer goroutine (writeLoop), the only caller of Transport.Send
//     and Transport.Close while it runs; its methods are safe from any goroutine.
//   - turns (handoff): atomics replies and the input goroutine leave each other (the answer
//     clock, a reply's end, assistant audio held).
//   - hist (history): the items and the reply audio playing, under history's own lock (items.go).
//   - replies: the responses running and the idle timer, under their own lock (replies.go).
//   - ledger: seconds heard and spoken for the meter, the quota left (metering.go): atomics;
//     meterLoop is its goroutine.
//
// Goroutines: run (input) starts the writer and the meter loop (and the drain watcher), and
// workers (transcriptions, partial decodes, replies) on work; on return it cancels ctx and waits
// for all of them. A reply runs two: its mind goroutine (the worker) and its writer (replyRun).
type conversation struct {
	srv     *Server
	log     *slog.Logger
	t       Transport
	media   Media
	grant   Grant
	convID  string
	engines Engines

	// ctx is the session's: nothing cancels it but the end of the conversation (run's return,
	// the writer's failure, a close). Set by run before any other goroutine starts.
	ctx    context.Context
	cancel context.CancelFunc
	work   sync.WaitGroup // transcription, partial and reply workers; run waits for them
	// backlog is the committed audio waiting for transcription (backlog.go).
	backlog backlog

	in      inputSide
	lang    hearingLanguage // the session's transcription language, for the workers
	outbox  outbox
	turns   handoff
	hist    history
	window  mindWindow // where the mind's view of a long conversation starts (truncation.go)
	replies replies
	ledger  ledger
	room    room          // the echo canceller and noise suppressor (room.go), under its own lock
	pause   pauseGate     // holds the replies' audio while speech is judged (interrupt.go)
	usage   *sessionUsage // the session's usage record (usage_record.go); nil without a recorder
	mcp     mcpState      // the session's MCP servers and approvals (mcp.go), under its own lock
	video   videoFrames   // frames waiting for the next user turn (video.go), the input goroutine's
}

// handoff is what replies and the input goroutine tell each other (atomics).
type handoff struct {
	// answerSince is when the user's speech ended (unix ns) while the turn detector's reply has
	// not yet sent audio; 0 otherwise. The first reply audio after it observes the answer latency.
	answerSince atomic.Int64
	// replyEnded is set by a conversation reply's end to 1 + the 24 kHz samples it spoke: the input
	// goroutine then starts idle_timeout_ms's clock where that audio finishes playing.
	replyEnded atomic.Int64
	// assistantAudio: the conversation holds assistant audio (a reply spoke into it), so its voice
	// is fixed, as OpenAI's is.
	assistantAudio atomic.Bool
}

// Converse runs one conversation on t until it ends (the client leaves, the engine closes it, or
// ctx is done), then returns with every goroutine it started finished. It is the engine's one
// entry point: the WebSocket handshake calls it after admission, and so will any other transport.
// g is the admitted grant, d the dialect the handshake chose, model the model asked for.
func (s *Server) Converse(ctx context.Context, t Transport, g Grant, d wire.Dialect, model string) {
	newConversation(s, t, g, d, model).run(ctx)
}

func newConversation(s *Server, t Transport, g Grant, d wire.Dialect, model string) *conversation {
	c := &conversation{srv: s, log: s.log, t: t, grant: g, engines: s.cfg.Engines.timed(s.metrics),
		convID: wire.NewID("conv_")}
	if t != nil {
		c.media = t.Media()
	}
	c.in.dialect = d
	c.in.input.track = c.media.TrackInput
	c.in.sess = wire.NewSession(wire.NewID("sess_"), model)
	c.outbox = outbox{t: t, enc: wire.NewEncoder(d), log: c.log}
	c.outbox.open()
	c.ledger = ledger{meter: c.tally(c.engines.Meter), budget: c.engines.Budget, principal: g.Principal, player: c.media.Player,
		log: c.log, kick: make(chan struct{}, 1), exhausted: c.quotaExceeded}
	c.backlog.freed = make(chan struct{}, 1)
	c.hist.limit = s.cfg.ConversationBytes
	c.mcp.client = s.cfg.MCP
	c.in.limit = newEventLimiter(s.cfg.EventRate, s.cfg.EventBurst)
	c.in.bytes = newByteLimiter(s.eventBytes, g.Principal.Subject, s.cfg.Now())
	if model == "" {
		c.in.sess.Model = "voiced"
	}
	return c
}

// run is the input goroutine. It returns when the client leaves, the session ends, or ctx is done.
func (c *conversation) run(parent context.Context) {
	c.ctx, c.cancel = context.WithCancel(parent)
	c.outbox.ctx, c.outbox.cancel = c.ctx, c.cancel
	c.ledger.ctx = c.ctx
	if h, ok := c.engines.Meter.(MeterHolder); ok {
		defer h.Hold()() // released after the last flush below (defers run last-in first-out)
	}
	defer c.usage.end(c) // usage_record.go: after the last flush below
	var writer, meter sync.WaitGroup
	writer.Go(c.outbox.writeLoop)
	meter.Go(c.ledger.meterLoop)
	stopDrain := func() {}
	if t := c.srv.cfg.Sockets; t != nil {
		stopDrain = door.WatchDrain(c.ctx, t.Draining(), c.drain)
	}
	defer func() {
		c.in.dropSpeculation()
		c.cancel() // replies and transcriptions stop; the writer ends
		c.work.Wait()
		c.mcp.closeAll()
		c.room.close()
		writer.Wait()
		stopDrain()
		meter.Wait()
		if c.media.Player != nil {
			// The player stops (a call hangs up): what it played is final before the last flush.
			c.t.Close(EndNormal, "")
		}
		// A reply worker can count its last samples after the meter loop's final flush: hand
		// them on now that every worker has returned (the meter writes them within a second,
		// and at shutdown its Close flushes after every conversation has drained).
		last, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		c.ledger.flush(last, false)
		cancel()
		c.t.Close(EndNormal, "")
		if c.in.detector != nil {
			c.in.detector.Close()
		}
		if cl, ok := c.in.squelch.(io.Closer); ok {
			cl.Close()
		}
	}()

	if es, ok := c.t.(EventSource); ok {
		es.Attach(c.send)
	}
	c.ledger.refreshBudget(c.ctx)
	if err := c.start(); err != nil {
		c.fail(err)
		c.awaitClose() // the writer sends the error and the close before run's return cancels it
		return
	}
	c.usage.begin(c) // usage_record.go
	idleTimeout := c.srv.cfg.IdleTimeout
	c.replies.startIdle(idleTimeout, func() {
		c.closeWith(wire.ErrSessionIdle(idleTimeout.String()), EndGoingAway, "idle")
	})
	defer c.replies.idle.Stop() // set once, before any reply can run

	for {
		in, err := c.t.Receive(c.ctx)
		if err != nil {
			if c.ctx.Err() == nil && !c.outbox.closed.Load() && !errors.Is(err, ErrClientClosed) {
				c.log.Debug("realtime read ended", "err", err)
			}
			return
		}
		c.replies.touchIdle(idleTimeout)
		if c.outbox.closed.Load() {
			c.awaitClose()
			return
		}
		c.receive(in)
	}
}

// awaitClose lets the writer reach a close that closeWith queued (the events before it, the
// error that explains it, then the close frame) before run's return cancels the writer: a client
// that keeps sending after the close was queued would otherwise get a bare 1000 and lose them.
// The writer cancels ctx once it has closed; a client that stopped reading is given up on after
// slowClientTimeout, as the writer would.
func (c *conversation) awaitClose() {
	stuck := time.NewTimer(slowClientTimeout)
	defer stuck.Stop()
	select {
	case <-c.ctx.Done():
	case <-stuck.C:
	}
}

// receive takes one input from the transport, on the input goroutine.
func (c *conversation) receive(in Inbound) {
	switch {
	case in.Refused != nil:
		if c.limited(in.Refused.EventID) {
			return
		}
		c.send(in.Refused)
	case in.Audio != nil:
		c.trackAudio(in.Audio)
	default:
		if ev, ok := wire.DecodeAppend(in.Event); ok {
			c.handle(ev)
			return
		}
		// encoding/json is about to read it: its bytes are charged first (an append in another
		// shape gets them back once decoded).
		if c.overBytes(in.Event) {
			return
		}
		ev, err := wire.DecodeGeneral(in.Event, c.in.dialect)
		if _, audio := ev.(*wire.InputAudioBufferAppend); audio && err == nil {
			c.srv.eventBytes.giveBack(c.grant.Principal.Subject, float64(len(in.Event)))
		} else {
			id := ""
			if ev != nil {
				id = ev.ClientEventID()
			}
			var we *wire.Error
			if errors.As(err, &we) {
				id = we.EventID
			}
			if c.limited(id) {
				return
			}
		}
		if err != nil {
			c.sendError(err)
			return
		}
		c.handle(ev)
	}
}

// limited spends one client event from the connection's rate limit (ratelimit.go): true when it
// is over the limit, then it has been refused by name (rate_limit_exceeded), or the conversation
// closed (1008) when the client keeps sending past twice its allowance.
func (c *conversation) limited(eventID string) bool {
	switch c.in.limit.take(c.srv.cfg.Now()) {
	case dropped:
		c.send(c.in.limit.errRateLimited(eventID))
		return true
	case abusive:
		c.log.Warn("realtime client kept sending over its event rate; closing", "rate", c.in.limit.rate, "burst", c.in.limit.burst)
		c.closeWith(c.in.limit.errRateLimited(eventID), EndPolicy, "event rate exceeded")
		return true
	}
	return false
}

// overBytes spends a client event's bytes from its principal's budget before it is decoded
// (ratelimit.go): true when it is over the budget, then it has been refused by name
// (rate_limit_exceeded) without being read, or the conversation closed (1008) when the client
// keeps sending past twice its allowance.
func (c *conversation) overBytes(event []byte) bool {
	switch c.in.bytes.take(len(event), c.srv.cfg.Now()) {
	case dropped:
		c.send(c.in.bytes.errOverBytes(wire.PeekEventID(event), len(event)))
		return true
	case abusive:
		c.log.Warn("realtime client kept sending over its event bytes; closing", "bytes_per_second", c.in.bytes.budgets.rate, "burst", c.in.bytes.budgets.burst)
		c.closeWith(c.in.bytes.errOverBytes(wire.PeekEventID(event), len(event)), EndPolicy, "event bytes exceeded")
		return true
	}
	return false
}

// start sends session.created, with the ticket's session config applied first.
func (c *conversation) start() error {
	if c.grant.Type == wire.SessionTranscription {
		if err := c.startTranscription(); err != nil { // transcription.go
			return err
		}
	} else if len(c.grant.Session) > 0 && string(c.grant.Session) != "null" {
		if err := applySessionObject(&c.in.sess, c.grant.Session, c.in.dialect); err != nil {
			return err
		}
	}
	if err := c.configure(); err != nil {
		return err
	}
	c.lang.set(c.in.sess)
	c.send(wire.SessionCreated{Session: c.in.sess})
	return nil
}

// configure (re)builds what depends on the session config: the input converter, the turn
// detector and the squelch.
func (c *conversation) configure() error {
	if err := c.in.input.setFormat(c.in.sess.InputFormat); err != nil {
		return err
	}
	if c.in.detector != nil {
		c.in.detector.Close()
		c.in.detector = nil
	}
	c.in.partials.reset()
	c.in.dropSpeculation()
	c.dropPending()
	// The squelch first: a detector reads the VAD pass it lends.
	if c.in.squelch == nil && c.engines.NewSquelch != nil {
		q, err := c.engines.NewSquelch()
		if err != nil {
			return fmt.Errorf("squelch: %w", err)
		}
		c.in.squelch = q
	}
	if c.in.sess.TurnDetection.Type != wire.TurnNone {
		var f turn.Detector
		var err error
		if shared, ok := c.in.squelch.(SharedSquelch); ok && c.engines.NewTurnDetectorOn != nil {
			f, err = c.engines.NewTurnDetectorOn(c.in.sess.TurnDetection, c.in.partials.Partial, shared)
		} else if c.engines.NewTurnDetector != nil {
			f, err = c.engines.NewTurnDetector(c.in.sess.TurnDetection, c.in.partials.Partial)
		}
		if err != nil {
			return fmt.Errorf("turn detection: %w", err)
		}
		if f != nil {
			c.in.detector = f
			c.in.detectBase = c.in.input.timeline
		}
	}
	return c.configureRoom()
}

// fail reports a failure to start and closes: the client's (a session object it carried that
// does not apply) is a warning, anything else the server's.
func (c *conversation) fail(err error) {
	var we *wire.Error
	if errors.As(err, &we) && we.Type != wire.TypeServer {
		c.log.Warn("realtime conversation refused: the client's session does not apply", "err", err)
	} else {
		c.log.Error("realtime conversation failed", "err", err)
	}
	if !errors.As(err, &we) {
		we = wire.ErrServer("the conversation could not start: see the server log", "")
	}
	c.closeWith(we, EndServerError, "server error")
}

// drain closes the conversation as the server drains (door.WatchDrain): the reply in flight
// finishes first.
func (c *conversation) drain() {
	// The replies in flight finish first: the conversation's and any out-of-band ones.
	for _, r := range c.replies.running() {
		select {
		case <-r.done:
		case <-c.ctx.Done():
			return
		}
	}
	c.closeWith(&wire.Error{Type: wire.TypeServer, Code: codeShuttingDown, Message: "The server is shutting down."},
		EndGoingAway, "server shutting down")
}
