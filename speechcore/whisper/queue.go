package whisper

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Kind orders a request in the engine's queue.
type Kind int

const (
	// Final is a finished utterance (a committed turn, a door's window): finals are served
	// before any partial, fairly between owners (one per owner in turn).
	Final Kind = iota
	// Partial is a partial decode of an audio still open (a turn in progress): served only when
	// no final waits; an owner has at most one queued, the newest (a newer one replaces it, and
	// the replaced one's caller gets ErrSuperseded at once). A final queued while a partial is
	// decoding ends that decode between decoder steps (ErrPreempted), and a final drops its own
	// owner's queued partial (ErrSuperseded: the turn it ends is over): a partial never delays a
	// final by more than one decoder step.
	Partial
)

func (k Kind) String() string {
	if k == Partial {
		return "partial"
	}
	return "final"
}

// Request says whose a transcription is, of what kind, and how to decode it. Owner names who
// shares the model fairly (a conversation's id); "" makes the request an owner of its own.
type Request struct {
	Owner string
	Kind  Kind
	// Language is the language token of the prompt: a code (ParseLanguage), "" for the engine's
	// default (Options.Language), or LanguageAuto to detect it from the decoder's language-token
	// scores, one extra decoder pass. A Partial never detects: "auto" decodes a partial in the
	// default language (callers pass the language their last final found).
	Language string
	// Timestamps decodes with Whisper's timestamp tokens (Result.Segments) instead of
	// <|notimestamps|>.
	Timestamps bool
	// Logprobs computes each text token's log-probability (Result.Logprobs).
	Logprobs bool
	// Translate decodes with Whisper's <|translate|> task token instead of <|transcribe|>: the
	// text is English whatever the language spoken (the language token stays the spoken one,
	// detected with LanguageAuto). Refused (ErrTranslateNotServed) on an English-only checkpoint.
	Translate bool
}

// DefaultOwnerDepth is Options.OwnerDepth's default.
const DefaultOwnerDepth = 2

// schedule is the engine's queue (the owner goroutine takes from it). Finals wait in one FIFO
// per owner; the owners with finals waiting take turns (round robin), so one owner's backlog
// (hundreds of tiny manual commits) delays its own finals, not another's: a final waits for at
// most one final of every other owner. An owner may have ownerDepth finals queued; its next
// waits for room (its own backlog slows it, and it never fills the shared depth). Partials,
// one per owner, go after every final, the oldest owner first; a final queued while a partial
// is being decoded preempts it (serve), and drops its owner's queued partial.
type schedule struct {
	depth, ownerDepth int
	decoders          int // owner goroutines taking jobs (Options.Decoders)
	// preempt: a final ends a partial being decoded (every decoder busy) and drops its owner's
	// queued partial (always on; off only in the benchmark that measures what it saves).
	preempt bool

	mu       sync.Mutex
	finals   map[string][]job // by owner, FIFO
	turns    []string         // owners with finals queued, in the order they are served
	queued   int              // finals queued, every owner
	partials map[string]job   // the newest partial per owner
	later    []string         // owners with a partial queued, oldest first
	ready    chan struct{}    // 1-buffered: something was queued
	room     chan struct{}    // closed (and replaced) when a final leaves the queue
	anon     atomic.Int64     // names the owners of requests that have none
	// busy counts the jobs popped and not yet served (at most decoders); running holds the
	// cancel of each partial among them (set by pop, removed by serve or a preempting final).
	busy    int
	seq     uint64
	running map[uint64]context.CancelCauseFunc

	// Partials answered without a decode (Stats): replaced by the owner's newer partial, dropped
	// by the owner's final, preempted mid-decode by any final.
	superseded, stale, preempted atomic.Int64
}

// errPreempt is the cause a preempted partial's decode context ends with.
var errPreempt = errors.New("preempted by a final")

func newSchedule(depth, ownerDepth, decoders int) *schedule {
	return &schedule{depth: depth, ownerDepth: ownerDepth, decoders: max(1, decoders), preempt: true, finals: map[string][]job{},
		partials: map[string]job{}, running: map[uint64]context.CancelCauseFunc{},
		ready: make(chan struct{}, 1), room: make(chan struct{})}
}

// push queues j for req. A final waits while the queue or its owner's share is full, until ctx
// ends or quit closes; a partial never waits.
func (s *schedule) push(ctx context.Context, req Request, j job, quit <-chan struct{}) error {
	owner := req.Owner
	if owner == "" {
		owner = "\x00" + strconv.FormatInt(s.anon.Add(1), 10)
	}
	for {
		s.mu.Lock()
		if req.Kind == Partial {
			if old, ok := s.partials[owner]; ok {
				old.reply <- jobResult{err: ErrSuperseded} // it keeps its place in line: the newest takes it
				s.superseded.Add(1)
			} else {
				s.later = append(s.later, owner)
			}
			s.partials[owner] = j
			s.mu.Unlock()
			s.kick()
			return nil
		}
		if s.queued < s.depth && len(s.finals[owner]) < s.ownerDepth {
			if len(s.finals[owner]) == 0 {
				s.turns = append(s.turns, owner)
			}
			s.finals[owner] = append(s.finals[owner], j)
			s.queued++
			if s.preempt {
				if old, ok := s.partials[owner]; ok { // a partial of the turn this final ends
					old.reply <- jobResult{err: ErrSuperseded}
					delete(s.partials, owner)
					s.later = slices.DeleteFunc(s.later, func(o string) bool { return o == owner })
					s.stale.Add(1)
				}
				if s.busy >= s.decoders { // no decoder free: end a partial's decode, if one runs
					for id, cancel := range s.running {
						cancel(errPreempt)
						delete(s.running, id)
						s.preempted.Add(1)
						break
					}
				}
			}
			s.mu.Unlock()
			s.kick()
			return nil
		}
		room := s.room
		s.mu.Unlock()
		select {
		case <-room:
		case <-ctx.Done():
			return ctx.Err()
		case <-quit:
			return ErrClosed
		}
	}
}

func (s *schedule) kick() {
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

// pop takes the next job: the next owner's oldest final, else the oldest owner's partial.
func (s *schedule) pop() (job, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.turns) > 0 {
		owner := s.turns[0]
		s.turns = s.turns[1:]
		q := s.finals[owner]
		j := q[0]
		if q = q[1:]; len(q) > 0 {
			s.finals[owner] = q
			s.turns = append(s.turns, owner) // its next waits for every other owner's
		} else {
			delete(s.finals, owner)
		}
		s.queued--
		close(s.room)
		s.room = make(chan struct{})
		s.busy++
		return j, true
	}
	if len(s.later) > 0 {
		owner := s.later[0]
		s.later = s.later[1:]
		j := s.partials[owner]
		delete(s.partials, owner)
		j.ctx, j.cancel = context.WithCancelCause(j.ctx)
		s.seq++
		j.id = s.seq
		s.running[j.id] = j.cancel
		s.busy++
		return j, true
	}
	return job{}, false
}

// serve decodes j (popped) with decode and answers its caller: it times the queue wait
// (Result.Wait, from the first push to now), and answers a partial preempted by a final with
// ErrPreempted. A context that ended before the pick-up is not decoded.
func (s *schedule) serve(j job, decode func(ctx context.Context, j job) (Result, error)) {
	picked := time.Now()
	var r jobResult
	if err := j.ctx.Err(); err != nil {
		r.err = err
	} else {
		r.res, r.err = decode(j.ctx, j)
		r.res.Wait, r.res.Kind = picked.Sub(j.queued), j.kind
	}
	s.release(j)
	if j.cancel != nil {
		if errors.Is(context.Cause(j.ctx), errPreempt) {
			if r.err != nil {
				r = jobResult{err: ErrPreempted}
			} else {
				s.preempted.Add(-1) // it had finished its last step: the result stands
			}
		}
		j.cancel(nil)
	}
	j.reply <- r
}

// release ends j's decoding slot: a partial can no longer be preempted.
func (s *schedule) release(j job) {
	s.mu.Lock()
	s.busy--
	delete(s.running, j.id)
	s.mu.Unlock()
}

// work is an owner's loop: it serves jobs with decode until quit closes, then answers whatever
// is still queued with ErrClosed. Several owners may work one schedule (Options.Decoders).
func (s *schedule) work(quit <-chan struct{}, decode func(ctx context.Context, j job) (Result, error)) {
	refuseQueued := func() {
		for j, ok := s.pop(); ok; j, ok = s.pop() {
			s.release(j)
			if j.cancel != nil {
				j.cancel(nil)
			}
			j.reply <- jobResult{err: ErrClosed}
		}
	}
	for {
		select {
		case <-quit:
			refuseQueued()
			return
		default:
		}
		j, ok := s.pop()
		if !ok {
			select {
			case <-quit:
				refuseQueued()
				return
			case <-s.ready:
			}
			continue
		}
		s.serve(j, decode)
	}
}

// inFlight is the number of jobs queued plus those being decoded.
func (s *schedule) inFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queued + len(s.partials) + s.busy
}

// len is the number of jobs queued.
func (s *schedule) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queued + len(s.partials)
}
