package session

import (
	"context"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/voiced/voiced/mind"
	"github.com/voiced/voiced/sentence"
	"github.com/voiced/voiced/wire"
)

// Speculation (issue 10, item 1). While the user's turn is still held, semantic_vad may judge the
// partial transcript finished (HintEndLikely, a pause after "What time is it?"). The conversation
// then asks the mind on that text at once and holds its answer, sending nothing. When the turn
// really ends, the reply started for it compares what it would ask the mind with what was asked:
// the same request (the last user message's text compared normalised: case, punctuation,
// whitespace; everything else exactly), and the reply adopts the speculation: it streams the held
// answer, and the rest as it comes, as its own, without asking the mind again. Different (the
// final transcript differs, the history or the session changed), or the speaker went on
// (HintEndUnlikely), or the turn was reset, and the speculation is cancelled: it sent no event,
// took no response id, counted no usage and wrote no item, so it leaves no trace but the
// voiced_conversation_speculative_mind_calls_total counters (a mind that bills per call pays for
// discarded ones: Config.Speculate turns it off).
//
// With a Voice and audio out, the speculation also synthesizes the first sentence of its answer
// (the piece a reply's splitter sends alone) as soon as the mind's stream yields it, into memory:
// the reply that adopts it sends that audio in place of its own first synthesis, so released, the
// first audio goes out at once. The held audio reaches no client and no meter before the reply
// sends it as its own (say), and is dropped with the speculation.
//
// Owners: the input goroutine starts a speculation and holds it (c.in.spec) until the turn
// ends; then the reply started for the turn holds it (reply.spec) and adopts or drops it. The
// mind's goroutine runs on c.work (run waits for it) and ends once its ctx is cancelled: whoever
// drops a speculation cancels it, never waiting on the network.

// heldDeltas bounds the answer a speculation holds before a reply adopts it; past it the mind is
// slowed (its emit waits), as a reply's own pipeline slows it.
const heldDeltas = 256

// Outcomes of a speculative mind call (the counter's label).
const (
	specStarted   = "started"
	specUsed      = "used"
	specDiscarded = "discarded"
)

type speculation struct {
	// counted: the outcome counter (specStarted…); log: the conversation's; work: its workers
	// (run waits for them); speaker: the Voice that synthesizes the first sentence.
	counted *prometheus.CounterVec
	log     *slog.Logger
	work    *sync.WaitGroup
	speaker Voice

	text   string       // the partial transcript speculated on, normalised
	req    mind.Request // what the mind was asked
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed once the mind's answer has ended: reply and err are set
	reply  mind.Reply
	err    error

	// splitter finds the first sentence of the answer (the speculation's mind goroutine); nil
	// without audio out. voice and speed are the session's when it started.
	splitter *sentence.Splitter
	voice    string
	speed    float64

	mu      sync.Mutex
	first   *heldPiece    // the first sentence's synthesis, once the stream yielded it
	held    []mind.Delta  // the answer so far, not yet taken by the reply that adopted it
	more    chan struct{} // cap 1: held grew
	room    chan struct{} // cap 1: the adopter took what was held
	settled atomic.Bool   // counted as used or discarded
}

// speculate starts the mind on text, the partial transcript of the held turn that the detector
// judged finished (on the input goroutine). A speculation on the same words stands; one on other
// words is dropped first.
func (c *conversation) speculate(text string) {
	norm := normalise(text)
	if !c.srv.cfg.Speculate || !c.in.sess.TurnDetection.CreateResponse || c.in.speechItem == "" || norm == "" {
		return
	}
	if c.in.spec != nil && c.in.spec.text == norm {
		return
	}
	c.in.dropSpeculation()
	if c.replies.answeringLive() {
		return // the turn's end could not start a reply now
	}
	items := append(c.hist.snapshot(nil), wire.Item{Type: wire.ItemMessage, Role: wire.RoleUser,
		Content: []wire.ContentPart{{Type: wire.InputAudio, Transcript: &text}}})
	cfg := c.in.sess.ForResponse(wire.ResponseParams{})
	sense := c.hist.senseFunc(c.srv.cfg.Senses)
	req := mindRequest(cfg, c.lang.lastDetected(), c.window.view(items, cfg.Truncation, lessSenses(c.srv.cfg.MindContextTokens, items, sense)), sense)
	ctx, cancel := context.WithCancel(c.ctx)
	s := &speculation{counted: c.srv.metrics.speculations, log: c.log, work: &c.work, speaker: c.engines.Voice, text: norm, req: req, ctx: ctx, cancel: cancel, done: make(chan struct{}),
		more: make(chan struct{}, 1), room: make(chan struct{}, 1), voice: cfg.Voice, speed: cfg.Speed}
	if !cfg.TextOnly && c.engines.Voice != nil {
		s.splitter = sentence.NewSplitter(sentence.Options{FirstAlone: true, SplitChars: splitChars})
	}
	c.in.spec = s
	m := c.engines.Mind
	if t, ok := m.(timedMind); ok {
		m = t.Mind // the reply that adopts it observes the first token it waited for
	}
	c.srv.metrics.speculations.WithLabelValues(specStarted).Inc()
	c.log.Debug("speculative mind call started", "item", c.in.speechItem)
	c.work.Go(func() {
		defer close(s.done)
		s.reply, s.err = m.Answer(ctx, req, s.hold)
		if s.err == nil && s.splitter != nil && s.first == nil {
			s.synthesize(s.splitter.Flush()) // an answer of one sentence ends only with the stream
		}
	})
}

// drop cancels the speculation; unless a reply adopted it, it counts as discarded. Safe on nil
// and more than once.
func (s *speculation) drop() {
	if s == nil {
		return
	}
	s.cancel()
	if s.settled.CompareAndSwap(false, true) {
		s.counted.WithLabelValues(specDiscarded).Inc()
		s.log.Debug("speculative mind call discarded")
	}
}

// adopt reports whether the reply asking req may take the speculation's answer as its own, and
// if so marks it used. A speculation whose mind already failed is not adopted: the reply asks
// again.
func (s *speculation) adopt(req mind.Request) bool {
	if s == nil || !sameRequest(s.req, req) {
		return false
	}
	select {
	case <-s.done:
		if s.err != nil {
			return false
		}
	default:
	}
	if !s.settled.CompareAndSwap(false, true) {
		return false
	}
	s.counted.WithLabelValues(specUsed).Inc()
	s.log.Debug("speculative mind call used")
	return true
}

// hold is the speculative call's emit: it keeps the delta for the reply that may adopt it, and
// starts the synthesis of the answer's first sentence once there is one.
func (s *speculation) hold(d mind.Delta) error {
	if s.splitter != nil && s.first == nil && d.Text != "" {
		if pieces := s.splitter.Push(d.Text); len(pieces) > 0 {
			s.synthesize(pieces[0])
		}
	}
	if d.Call != nil {
		call := *d.Call
		d.Call = &call
	}
	for {
		s.mu.Lock()
		if len(s.held) < heldDeltas {
			s.held = append(s.held, d)
			s.mu.Unlock()
			signal(s.more)
			return nil
		}
		s.mu.Unlock()
		select {
		case <-s.room:
		case <-s.ctx.Done():
			return s.ctx.Err()
		}
	}
}

// heldPiece is a speculation's synthesis of its answer's first sentence: the audio is complete
// (or the synthesis failed) once done is closed.
type heldPiece struct {
	text string // as the Voice was asked (trimmed)
	done chan struct{}
	pcm  []int16 // 24 kHz
	err  error
}

// synthesize starts the Voice on piece, the answer's first sentence, on a worker (the
// speculation's mind goroutine; once per speculation). The audio is only kept.
func (s *speculation) synthesize(piece string) {
	piece = strings.TrimSpace(piece)
	if piece == "" {
		return
	}
	h := &heldPiece{text: piece, done: make(chan struct{})}
	s.mu.Lock()
	s.first = h
	s.mu.Unlock()
	s.work.Go(func() {
		defer close(h.done)
		h.err = s.speaker.Speak(s.ctx, piece, s.voice, s.speed, func(pcm []int16) error {
			h.pcm = append(h.pcm, pcm...)
			return nil
		})
	})
}

// firstAudio is the held synthesis of piece (trimmed) when the speculation made one in voice at
// speed, waiting for it to finish; ok false when there is none to use (another text or voice, a
// failed synthesis): the reply then synthesizes the piece itself.
func (s *speculation) firstAudio(ctx context.Context, piece, voice string, speed float64) (pcm []int16, ok bool, err error) {
	if s == nil {
		return nil, false, nil
	}
	s.mu.Lock()
	h := s.first
	s.mu.Unlock()
	if h == nil || h.text != piece || s.voice != voice || s.speed != speed {
		return nil, false, nil
	}
	select {
	case <-h.done:
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
	return h.pcm, h.err == nil, nil
}

func (s *speculation) take() []mind.Delta {
	s.mu.Lock()
	held := s.held
	s.held = nil
	s.mu.Unlock()
	if len(held) > 0 {
		signal(s.room)
	}
	return held
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Answer makes an adopted speculation a mind.Mind for the reply: it emits what was held, then
// each delta as the speculative call produces it, and returns that call's reply. req is the
// adopting reply's (adopt checked it asks the same).
func (s *speculation) Answer(ctx context.Context, _ mind.Request, emit func(mind.Delta) error) (mind.Reply, error) {
	for {
		ended := false
		select {
		case <-s.done:
			ended = true // nothing is held after this but what take returns now
		default:
		}
		for _, d := range s.take() {
			if err := emit(d); err != nil {
				return mind.Reply{}, err
			}
		}
		if ended {
			return s.reply, s.err
		}
		select {
		case <-s.more:
		case <-s.done:
		case <-ctx.Done():
			return mind.Reply{}, ctx.Err()
		}
	}
}

var _ mind.Mind = (*speculation)(nil)

// sameRequest: b asks what a asked, the last user message's text compared normalised.
func sameRequest(a, b mind.Request) bool {
	if a.Instructions != b.Instructions || a.ToolChoice != b.ToolChoice || len(a.History) != len(b.History) ||
		a.Temperature != b.Temperature || a.MaxOutputTokens != b.MaxOutputTokens ||
		!reflect.DeepEqual(a.ParallelToolCalls, b.ParallelToolCalls) ||
		len(a.History) == 0 || !reflect.DeepEqual(a.Tools, b.Tools) {
		return false
	}
	n := len(a.History) - 1
	la, lb := a.History[n], b.History[n]
	if la.Role != mind.RoleUser || lb.Role != mind.RoleUser || normalise(la.Text) != normalise(lb.Text) ||
		!reflect.DeepEqual(unwritten(la.Parts), unwritten(lb.Parts)) { // a turn's frames or audio (senses.go)
		return false
	}
	return reflect.DeepEqual(a.History[:n], b.History[:n])
}

// unwritten is a message's parts other than text.
func unwritten(parts []mind.Part) []mind.Part {
	var out []mind.Part
	for _, p := range parts {
		if p.Type != mind.PartText {
			out = append(out, p)
		}
	}
	return out
}

// normalise is a transcript as compared for speculation: lower case, letters and digits only,
// single spaces ("Hello, there!" and "hello there" are the same words).
func normalise(text string) string {
	return strings.Join(strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}), " ")
}
