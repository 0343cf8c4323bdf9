package speechdoor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/sentence"
	"github.com/voiced/voiced/speechcore"
	"github.com/voiced/voiced/speechcore/kokoro"
)

// Defaults of WS /v1/speak/stream.
const (
	// DefaultSpeakIdle closes a socket that sent nothing for this long while nothing was spoken.
	DefaultSpeakIdle = DefaultSocketIdle
	// DefaultSplitChars is the batch size when start gives no split_chars (or 0): Kokoro takes at
	// most 510 phonemes a call, about 400 characters of English, so 300 keeps a batch to one call.
	DefaultSplitChars = 300
	// MaxSplitChars bounds split_chars: the splitter holds up to 4× it of text waiting for a
	// sentence end, and a batch over kokoro.MaxPieceChars is synthesised in parts anyway. Without
	// it, split_chars 1e9 made the splitter keep every unpunctuated byte a client sent.
	MaxSplitChars = 1000
	// speakQueuePieces bounds the pieces waiting to be spoken; a client that sends faster than
	// speech is slowed by TCP.
	speakQueuePieces = 64
)

// ErrInvalidSplitChars refuses a split_chars outside 0..MaxSplitChars.
var ErrInvalidSplitChars = door.NewRefusal(http.StatusBadRequest, "invalid_split_chars",
	fmt.Sprintf("split_chars must be 0 (the default, %d) to %d", DefaultSplitChars, MaxSplitChars))

// SpeakFormat is the audio the stream door sends: headerless PCM16LE mono 24 kHz.
const SpeakFormat = "audio/L16; rate=24000; channels=1"

// SpeakDoor serves WS /v1/speak/stream (reference/002, 003): text arrives a few characters at a
// time and is spoken a sentence at a time.
//
// Client → server, JSON text frames:
//
//	{"type":"start","voice":"af_heart","speed":1.0,"split_chars":300,"seed":7}  optional; may come again
//	{"type":"text","text":"…"}       more text; whole sentences are spoken as they complete
//	{"type":"flush","text":"…"}      speak what is buffered plus this text as one piece now
//	{"type":"cancel"}                stop mid-sentence, drop what is buffered; the socket stays
//	{"type":"end","text":"…"}        speak what is left, answer done, close
//
// Server → client: ready{sample_rate, format}, format{contentType}, then per piece
// speaking{index, text}, binary PCM16LE, spoken{index, samples, durationMs}; queued when another
// socket holds the model (this one waits), cancelled, done, and errors as
// {"type":"error","name":…,"message":…} (the one envelope of every door; the socket survives
// bad input). The first piece is the first sentence alone; later pieces batch whole sentences
// up to split_chars; unpunctuated text breaks at a space past it. voice and speed from a later
// start apply to pieces queued after it. seed is accepted and has no effect (Kokoro is
// deterministic). A socket idle for IdleTimeout with nothing being spoken is closed.
type SpeakDoor struct {
	svc *Doors
	// IdleTimeout (default: the service's Config.SocketIdle).
	IdleTimeout time.Duration
}

// NewSpeakDoor returns the door reading its engine, gate and socket registry from svc.
func NewSpeakDoor(svc *Doors) *SpeakDoor {
	return &SpeakDoor{svc: svc, IdleTimeout: svc.cfg.SocketIdle}
}

// speakMessage is any client frame; which fields matter depends on Type.
type speakMessage struct {
	Type       string   `json:"type"`
	Text       string   `json:"text"`
	Voice      *string  `json:"voice"`
	VoiceID    *string  `json:"voice_id"` // reference/002's name for it
	Speed      *float64 `json:"speed"`
	SplitChars *int     `json:"split_chars"`
	Seed       *int64   `json:"seed"`
}

type speakReady struct {
	Type       string `json:"type"`
	SampleRate int    `json:"sample_rate"`
	Format     string `json:"format"`
}

type speakFormat struct {
	Type        string `json:"type"`
	ContentType string `json:"contentType"`
}

type speakSpeaking struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
	Text  string `json:"text"`
}

type speakSpoken struct {
	Type       string  `json:"type"`
	Index      int     `json:"index"`
	Samples    int     `json:"samples"`
	DurationMs float64 `json:"durationMs"`
}

type speakEvent struct {
	Type string `json:"type"` // queued, cancelled, done
}

func (d *SpeakDoor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	engine := d.svc.speech.Kokoro
	if engine == nil {
		d.svc.refuse(w, speechcore.ErrNotWarm)
		return
	}
	ctx, conn, done, ok := d.svc.admitSocket(w, r)
	if !ok {
		return // refused by name already
	}
	defer done()
	defer d.svc.opened("speak")()
	defer d.svc.holdUsage()() // the meter's close waits for this door's last seconds
	s := &speakSession{
		svc:      d.svc,
		conn:     conn,
		engine:   engine,
		w:        newSocketWriter(conn, d.svc.log, d.svc.tab(r).spoken),
		queue:    make(chan speakPiece, speakQueuePieces),
		settings: speakSettings{splitChars: DefaultSplitChars},
	}
	s.idle = newIdleWatch(d.IdleTimeout, func() bool { return s.pending.Load() > 0 })
	s.splitter = kokoro.NewSplitter(kokoro.SplitterOptions{FirstAlone: true, SplitChars: DefaultSplitChars})
	s.run(ctx, d.svc.Sockets.Draining())
}

// speakSettings are what start sets; each piece carries the ones live when it was queued.
type speakSettings struct {
	voice      string
	speed      float32
	splitChars int
}

// speakPiece is one unit of work for the speaker: a piece of text, or a marker.
type speakPiece struct {
	gen      int64
	index    int
	text     string
	settings speakSettings
	at       time.Time // when the piece was complete (queued for the speaker)
	done     bool      // answer done and close once everything before it is spoken
	goAway   bool      // shutdown: close with GoingAway once everything before it is spoken
}

// speakSession is one /v1/speak/stream socket. run (the read loop) owns it: it starts the writer,
// the speaker and the watchers, and waits for them.
type speakSession struct {
	svc    *Doors
	conn   *websocket.Conn
	engine *kokoro.Engine
	w      *socketWriter
	idle   *idleWatch // poked by the read loop and the speaker; busy while pieces are pending

	queue   chan speakPiece // written by the read loop and the drain watcher; closed by run
	pending atomic.Int64    // pieces queued or being spoken

	// Owned by the read loop.
	settings speakSettings
	splitter *kokoro.Splitter
	pieces   int // pieces queued so far (their index)

	// The generation: cancel ends the current one (its context, and the writer drops its frames).
	base      context.Context // the session's context, parent of every generation's
	mu        sync.Mutex
	gen       int64
	genCtx    context.Context
	genCancel context.CancelFunc

	// The node's text budget: textHeld is what this socket took from it, textQueued the bytes of
	// the pieces queued or being spoken. The read loop trues textHeld up to textQueued plus the
	// splitter's buffer after each message (reconcileText); the speaker gives a piece's bytes back
	// once it is spoken or dropped (pieceDone); run gives back the rest when the socket closes.
	textMu     sync.Mutex
	textHeld   int64
	textQueued int64
}

func (s *speakSession) run(ctx context.Context, draining <-chan struct{}) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.base, s.gen = ctx, 1
	s.w.gen.Store(1)
	s.genCtx, s.genCancel = context.WithCancel(ctx)

	var writer, speaker, watchers sync.WaitGroup
	writer.Add(1)
	go func() { defer writer.Done(); s.w.run(ctx, cancel) }()
	speaker.Add(1)
	go func() { defer speaker.Done(); s.speak(ctx) }()
	stop := make(chan struct{})
	watchers.Add(1)
	go func() { defer watchers.Done(); s.watchIdle(ctx, stop) }()
	// Shutdown: the speaker closes with GoingAway once everything queued before is spoken.
	stopDrain := door.WatchDrain(ctx, draining, func() { s.send(ctx, speakPiece{goAway: true}) })

	s.w.json(ctx, 0, speakReady{Type: "ready", SampleRate: kokoro.SampleRate, Format: "pcm16le"})
	s.w.json(ctx, 0, speakFormat{Type: "format", ContentType: SpeakFormat})
	s.read(ctx)

	// The client is gone (or closed after done): stop speaking, then the writer.
	cancel()
	close(stop)
	stopDrain()
	watchers.Wait()
	close(s.queue)
	speaker.Wait()
	s.textMu.Lock()
	s.svc.text.give(s.textHeld)
	s.textHeld, s.textQueued = 0, 0
	s.textMu.Unlock()
	s.w.finish(ctx)
	writer.Wait()
	s.mu.Lock()
	s.genCancel()
	s.mu.Unlock()
	s.conn.CloseNow()
}

// read is the read loop: it parses each frame and queues what is to be spoken.
func (s *speakSession) read(ctx context.Context) {
	for {
		typ, data, tooLarge, err := readTextFrame(ctx, s.conn)
		if err != nil {
			if tooLarge {
				s.w.json(ctx, 0, door.Frame(ErrTextTooLarge))
				s.w.closeWith(ctx, websocket.StatusMessageTooBig, ErrTextTooLarge.Name())
			}
			return
		}
		s.poke()
		switch {
		case tooLarge:
			s.w.json(ctx, 0, door.Frame(ErrTextTooLarge))
			continue
		case typ == websocket.MessageBinary:
			s.w.json(ctx, 0, door.Frame(ErrBinaryRefused))
			continue
		}
		var msg speakMessage
		if err := json.Unmarshal(data, &msg); err != nil {
			s.w.json(ctx, 0, door.Frame(ErrMalformedJSON))
			continue
		}
		if err := s.takeText(msg); err != nil {
			s.w.json(ctx, 0, door.Frame(err))
			continue
		}
		if err := s.handle(ctx, msg); err != nil {
			s.w.json(ctx, 0, door.Frame(err))
		}
		s.reconcileText()
	}
}

// takeText takes a message's text from the node's text budget before it is pushed or queued;
// text that does not fit is refused text_budget_full and the message is not applied.
func (s *speakSession) takeText(msg speakMessage) error {
	n := int64(len(msg.Text))
	if n == 0 {
		return nil
	}
	if !s.svc.text.take(n) {
		return ErrTextBudgetFull
	}
	s.textMu.Lock()
	s.textHeld += n
	s.textMu.Unlock()
	return nil
}

// reconcileText sets what this socket holds of the text budget to what it really holds: the
// pieces queued or being spoken and the splitter's buffer. Only the read loop calls it.
func (s *speakSession) reconcileText() {
	buffered := int64(len(s.splitter.Buffered()))
	s.textMu.Lock()
	defer s.textMu.Unlock()
	want := s.textQueued + buffered
	switch {
	case want < s.textHeld:
		s.svc.text.give(s.textHeld - want)
	case want > s.textHeld:
		s.svc.text.force(want - s.textHeld)
	}
	s.textHeld = want
}

// pieceQueued counts a piece about to be queued: pending (the socket is not idle) and its text
// queued.
func (s *speakSession) pieceQueued(p speakPiece) {
	s.pending.Add(1)
	s.textMu.Lock()
	s.textQueued += int64(len(p.text))
	s.textMu.Unlock()
}

// pieceDone undoes pieceQueued once a piece is spoken, dropped or cancelled, and gives its text
// back to the node's budget.
func (s *speakSession) pieceDone(p speakPiece) {
	n := int64(len(p.text))
	s.textMu.Lock()
	s.textQueued -= n
	s.textHeld -= n
	s.svc.text.give(n)
	s.textMu.Unlock()
	s.pending.Add(-1)
}

// handle applies one client message; a returned error is sent as a named error frame.
func (s *speakSession) handle(ctx context.Context, msg speakMessage) error {
	switch msg.Type {
	case "start":
		return s.start(ctx, msg)
	case "text":
		s.enqueue(ctx, s.splitter.Push(msg.Text)...)
	case "flush":
		// One piece as the client asked, unless it is over kokoro.MaxPieceChars: then it is
		// broken at word boundaries (a 4 MiB flush is neither one synthesis nor one queued piece).
		s.enqueue(ctx, sentence.Cut(s.splitter.Flush()+" "+msg.Text, kokoro.MaxPieceChars)...)
	case "end":
		pieces := s.splitter.Push(msg.Text)
		if rest := s.splitter.Flush(); rest != "" {
			pieces = append(pieces, rest)
		}
		s.enqueue(ctx, pieces...)
		s.send(ctx, speakPiece{done: true})
	case "cancel":
		s.cancel()
		s.w.json(ctx, 0, speakEvent{Type: "cancelled"})
	case "":
		return door.Refuse(ErrMalformedJSON, `the frame has no "type"; types are start, text, flush, cancel and end`)
	default:
		return door.Refuse(ErrUnknownSpeakMessage, fmt.Sprintf("unknown message type %q; types are start, text, flush, cancel and end", clip(msg.Type)))
	}
	return nil
}

// start validates and applies a start message; nothing changes if any field is refused.
func (s *speakSession) start(ctx context.Context, msg speakMessage) error {
	next := s.settings
	voice := msg.Voice
	if voice == nil {
		voice = msg.VoiceID
	}
	if voice != nil {
		if err := checkVoice(s.engine, *voice); err != nil {
			return err
		}
		next.voice = *voice
	}
	if msg.Speed != nil {
		if _, err := kokoro.CheckSpeed(float32(*msg.Speed)); err != nil {
			return ErrSpeedOutOfRange
		}
		next.speed = float32(*msg.Speed)
	}
	if msg.SplitChars != nil {
		if *msg.SplitChars < 0 || *msg.SplitChars > MaxSplitChars {
			return door.Refuse(ErrInvalidSplitChars, fmt.Sprintf("split_chars must be 0 (the default, %d) to %d; it was %d", DefaultSplitChars, MaxSplitChars, *msg.SplitChars))
		}
		next.splitChars = *msg.SplitChars
		if next.splitChars == 0 {
			next.splitChars = DefaultSplitChars
		}
	}
	if next.splitChars != s.settings.splitChars {
		buffered := s.splitter.Flush()
		s.splitter = kokoro.NewSplitter(kokoro.SplitterOptions{FirstAlone: s.pieces == 0, SplitChars: next.splitChars})
		defer func() { s.enqueue(ctx, s.splitter.Push(buffered)...) }()
	}
	s.settings = next
	return nil
}

// enqueue queues pieces with the settings live now.
func (s *speakSession) enqueue(ctx context.Context, pieces ...string) {
	for _, text := range pieces {
		s.mu.Lock()
		gen := s.gen
		s.mu.Unlock()
		p := speakPiece{gen: gen, index: s.pieces, text: text, settings: s.settings, at: time.Now()}
		s.pieceQueued(p)
		if !s.send(ctx, p) {
			s.pieceDone(p)
			return
		}
		s.pieces++
	}
}

func (s *speakSession) send(ctx context.Context, p speakPiece) bool {
	select {
	case s.queue <- p:
		return true
	case <-ctx.Done():
		return false
	}
}

// cancel ends the current generation: the piece being spoken stops mid-way, queued pieces and
// buffered text are dropped, and the writer drops frames of the old generation still on their way.
func (s *speakSession) cancel() {
	s.mu.Lock()
	s.genCancel()
	s.gen++
	s.w.gen.Store(s.gen)
	s.genCtx, s.genCancel = context.WithCancel(s.base)
	s.mu.Unlock()
	s.splitter.Flush()
	var markers []speakPiece
	for {
		select {
		case p := <-s.queue:
			if p.done || p.goAway {
				markers = append(markers, p)
			} else {
				s.pieceDone(p)
			}
			continue
		default:
		}
		break
	}
	for _, m := range markers {
		s.send(s.base, m)
	}
}

// speak is the speaker: one piece at a time, in order.
func (s *speakSession) speak(ctx context.Context) {
	for p := range s.queue {
		switch {
		case p.done:
			s.w.json(ctx, 0, speakEvent{Type: "done"})
			s.w.closeWith(ctx, websocket.StatusNormalClosure, "done")
			continue
		case p.goAway:
			s.w.closeWith(ctx, websocket.StatusGoingAway, "server shutting down")
			continue
		}
		s.speakPiece(ctx, p)
		s.pieceDone(p)
		s.poke()
	}
}

func (s *speakSession) speakPiece(ctx context.Context, p speakPiece) {
	s.mu.Lock()
	gen, genCtx := s.gen, s.genCtx
	s.mu.Unlock()
	if p.gen != gen || ctx.Err() != nil {
		return // cancelled while it waited
	}
	s.w.json(ctx, gen, speakSpeaking{Type: "speaking", Index: p.index, Text: p.text})
	started := time.Now()
	samples, first := 0, true
	// A piece over kokoro.MaxPieceChars comes in parts: each part's audio is one binary frame,
	// sent as soon as it exists; spoken counts them all.
	err := s.engine.Synthesize(genCtx, kokoro.Request{
		Text: p.text, Voice: p.settings.voice, Speed: p.settings.speed,
		OnWait: func() { s.w.json(ctx, gen, speakEvent{Type: "queued"}) },
	}, func(c kokoro.Chunk) error {
		s.svc.speech.ObserveSynthesis(time.Since(started))
		if first && !p.at.IsZero() {
			s.svc.metrics.firstFrame.WithLabelValues("speak").Observe(time.Since(p.at).Seconds())
		}
		first = false
		if !s.w.pcm(ctx, gen, c.PCM) {
			return ctx.Err()
		}
		samples += len(c.PCM)
		started = time.Now()
		return nil
	})
	switch {
	case genCtx.Err() != nil || ctx.Err() != nil:
		return // cancelled mid-piece: what was not sent is dropped
	case errors.Is(err, kokoro.ErrNothingToSay):
		s.w.json(ctx, gen, speakSpoken{Type: "spoken", Index: p.index})
		return
	case err != nil:
		s.w.json(ctx, gen, door.Frame(synthesisError(err)))
		return
	}
	s.w.json(ctx, gen, speakSpoken{Type: "spoken", Index: p.index, Samples: samples, DurationMs: samplesMs(samples)})
}

func (s *speakSession) poke() { s.idle.poke() }

// watchIdle closes the socket after the idle timeout with no client frame while nothing is being spoken.
func (s *speakSession) watchIdle(ctx context.Context, stop <-chan struct{}) {
	s.idle.run(ctx, stop, func() bool {
		s.w.json(ctx, 0, door.Frame(ErrIdleTimeout))
		s.w.closeWith(ctx, websocket.StatusPolicyViolation, ErrIdleTimeout.Name())
		return true
	})
}
