package turn

import (
	"errors"
	"fmt"
)

// Shared is one pass of a Prober read by several readers of the same audio (a conversation's
// squelch and its turn detector): the model runs once per window whoever reads it. It is a Speech:
// each NewProber is a reader. Every reader must be fed the same audio, in order; the one ahead
// runs the model and the others read the probabilities it recorded, kept until the last open
// reader has passed them. One owner: readers are fed from one goroutine.
type Shared struct {
	model   Prober
	origin  int64     // where window 0 began, in the pass's samples (0 = the first sample fed here)
	fed     int64     // samples fed to the model
	base    int64     // index of the window probs[0] holds
	probs   []float32 // the windows run and not yet read by every open reader
	readers []*sharedReader
	err     error // the model's failure: every later read reports it
	closed  bool
}

// Share starts a shared pass over model; Close closes model.
func Share(model Prober) *Shared {
	return &Shared{model: model, origin: -int64(model.Pending())}
}

// NewProber opens a reader that joins the pass where the audio fed to it so far ends: feed it what
// follows. Its Reset does not send the model back to silence (the other readers read on); Close
// lets the pass forget what only it had left to read.
func (s *Shared) NewProber() (Prober, error) {
	if s.closed {
		return nil, fmt.Errorf("shared speech pass: %w", ErrClosed)
	}
	r := &sharedReader{pass: s, pos: s.fed}
	s.readers = append(s.readers, r)
	return r, nil
}

// Windows reports how many windows the model has run: once per window, however many read them.
func (s *Shared) Windows() int64 { return s.base + int64(len(s.probs)) }

// Close closes the model; readers still open fail their next Feed.
func (s *Shared) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	s.probs = nil
	return s.model.Close()
}

// windowsBefore is how many windows end at or before pass sample pos.
func (s *Shared) windowsBefore(pos int64) int64 {
	return (pos - s.origin) / int64(s.model.Window())
}

// run feeds the model the audio that takes the pass from fed to end.
func (s *Shared) run(pcm []float32) {
	if s.err != nil {
		s.fed += int64(len(pcm))
		return
	}
	err := s.model.Feed(pcm, func(prob float32) { s.probs = append(s.probs, prob) })
	s.fed += int64(len(pcm))
	if err != nil {
		s.err = err
	}
}

// forget drops the probabilities every open reader has read.
func (s *Shared) forget() {
	next := s.base + int64(len(s.probs))
	for _, r := range s.readers {
		next = min(next, s.windowsBefore(r.pos))
	}
	if drop := next - s.base; drop > 0 {
		n := copy(s.probs, s.probs[drop:])
		s.probs = s.probs[:n]
		s.base = next
	}
}

// errReaderAhead: a reader was fed audio past what the pass has run without the audio between.
var errReaderAhead = errors.New("shared speech pass: reader out of step with the pass")

type sharedReader struct {
	pass   *Shared
	pos    int64 // pass samples this reader has been fed
	closed bool
}

func (r *sharedReader) Feed(pcm []float32, emit func(prob float32)) error {
	s := r.pass
	if r.closed || s.closed {
		return ErrClosed
	}
	if r.pos > s.fed {
		return errReaderAhead
	}
	end := r.pos + int64(len(pcm))
	if end > s.fed {
		s.run(pcm[s.fed-r.pos:])
	}
	from, to := s.windowsBefore(r.pos), s.windowsBefore(end)
	r.pos = end
	for k := max(from, s.base); k < to && k-s.base < int64(len(s.probs)); k++ {
		emit(s.probs[k-s.base])
	}
	s.forget()
	return s.err
}

func (r *sharedReader) Window() int { return r.pass.model.Window() }

func (r *sharedReader) Pending() int {
	return int((r.pos - r.pass.origin) % int64(r.pass.model.Window()))
}

// Reset leaves the shared model alone: the reader reads on where it is.
func (r *sharedReader) Reset() {}

func (r *sharedReader) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	s := r.pass
	for i, o := range s.readers {
		if o == r {
			s.readers = append(s.readers[:i], s.readers[i+1:]...)
			break
		}
	}
	s.forget()
	return nil
}
