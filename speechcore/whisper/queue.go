package whisper

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
)

// Kind orders a request in the engine's queue.
type Kind int

const (
	// Final is a finished utterance (a committed turn, a door's window): finals are served
	// before any partial, fairly between owners (one per owner in turn).
	Final Kind = iota
	// Partial is a partial decode of an audio still open (a turn in progress): served only when
	// no final waits; an owner has at most one queued, the newest (a newer one replaces it, and
	// the replaced one's caller gets ErrSuperseded at once).
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
// one per owner, go after every final, the oldest owner first.
type schedule struct {
	depth, ownerDepth int

	mu       sync.Mutex
	finals   map[string][]job // by owner, FIFO
	turns    []string         // owners with finals queued, in the order they are served
	queued   int              // finals queued, every owner
	partials map[string]job   // the newest partial per owner
	later    []string         // owners with a partial queued, oldest first
	ready    chan struct{}    // 1-buffered: something was queued
	room     chan struct{}    // closed (and replaced) when a final leaves the queue
	anon     atomic.Int64     // names the owners of requests that have none
}

func newSchedule(depth, ownerDepth int) *schedule {
	return &schedule{depth: depth, ownerDepth: ownerDepth, finals: map[string][]job{}, partials: map[string]job{},
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
		return j, true
	}
	if len(s.later) > 0 {
		owner := s.later[0]
		s.later = s.later[1:]
		j := s.partials[owner]
		delete(s.partials, owner)
		return j, true
	}
	return job{}, false
}

// len is the number of jobs queued.
func (s *schedule) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queued + len(s.partials)
}
