package squelch

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	ort "github.com/yalue/onnxruntime_go"
)

// DefaultMaxBatch caps the windows one batched Run takes (Model.SetMaxBatch).
const DefaultMaxBatch = 64

// batcher runs the windows of every Stream on one Model together: a Stream's window is queued,
// and whoever leads takes every queued window (up to max), packs their inputs and states into
// rows, makes one Run and unpacks each row's probability and state. Nothing waits on a timer: a
// window that finds no Run in progress leads; when it is the only stream open on the model it runs
// at once, exactly as it did unbatched (its own tensors, the graph fixed at batch 1); with other
// streams open it first yields the processor once, so that goroutines ready to run can queue their
// windows. A window that arrives while a Run is in progress waits for it to end and then rides the
// next one, whose leader is the first window queued. Probabilities are bit-identical to a stream
// alone (TestBatchedSameProbabilities). Silero on the CPU costs ~120 µs of a core per window alone and ~40–50 µs per row at 16
// or 64 rows (BenchmarkRunRows). No goroutine is started: the streams' own goroutines lead.
type batcher struct {
	model *Model

	mu      sync.Mutex
	queue   []*Stream
	running int // leaders between taking their batch and handing on
	max     int // rows per Run
	runners int // leaders at once: another leads only when a full batch waits
	free    map[int][]*rows
	closed  bool
	streams atomic.Int64 // Streams open on the model
	idle    *sync.Cond   // broadcast when the last leader hands on to nobody

	runs, windows int64 // Runs made and windows they ran (BatchStats)
	largest       int   // the most windows one Run took
}

// rows is one set of packed tensors for a batch of n windows.
type rows struct {
	n      int
	input  *ort.Tensor[float32] // [n, 576]
	state  *ort.Tensor[float32] // [2, n, 128]
	stateN *ort.Tensor[float32] // [2, n, 128]
	output *ort.Tensor[float32] // [n, 1]
}

func newBatcher(m *Model) *batcher {
	b := &batcher{model: m, max: DefaultMaxBatch, runners: max(1, runtime.GOMAXPROCS(0)), free: map[int][]*rows{}}
	b.idle = sync.NewCond(&b.mu)
	return b
}

// SetMaxBatch caps the windows one Run takes; 1 turns batching off (every window runs alone). A
// model run as shipped (not specialised) always runs windows alone.
func (m *Model) SetMaxBatch(n int) {
	b := m.batch
	b.mu.Lock()
	b.max = max(1, n)
	if m.batched == nil {
		b.max = 1
	}
	b.mu.Unlock()
}

// BatchStats reports the Runs made and the windows they ran: windows/runs is the mean batch.
func (m *Model) BatchStats() (runs, windows int64) {
	b := m.batch
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.runs, b.windows
}

// run runs s's current window (s.input, s.state), alone or in a batch, and returns its probability
// with s.state advanced.
func (b *batcher) run(s *Stream) (float32, error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return 0, fmt.Errorf("run silero vad: %w", ErrClosed)
	}
	b.queue = append(b.queue, s)
	var batch []*Stream
	switch {
	case b.running == 0: // the queue was empty (but for s): s leads
		if b.streams.Load() > 1 && b.max > 1 {
			// Other streams are open: yield the processor once (no timer) so those whose
			// goroutines are ready to run can queue their windows for this Run. s leaves the
			// queue first, so no other leader can take its window meanwhile.
			clear(b.queue)
			b.queue = b.queue[:0]
			b.running++
			b.mu.Unlock()
			runtime.Gosched()
			b.mu.Lock()
			batch = b.takeFront(append(make([]*Stream, 0, b.max), s), b.max-1)
		} else {
			b.running++
			batch = b.takeFront(nil, b.max)
		}
		b.mu.Unlock()
	case len(b.queue) >= b.max && b.running < b.runners: // a full batch waits: s leads it too
		n := min(len(b.queue), b.max)
		batch = append([]*Stream(nil), b.queue[len(b.queue)-n:]...) // the last n, s among them
		clear(b.queue[len(b.queue)-n:])
		b.queue = b.queue[:len(b.queue)-n]
		b.running++
		b.mu.Unlock()
	default:
		b.mu.Unlock()
		if !<-s.wake {
			return s.prob, s.err // a leader ran it
		}
		batch = s.batch // handed the lead with a batch taken for it
		s.batch = nil
	}
	b.runBatch(batch)
	b.mu.Lock()
	b.runs++
	b.windows += int64(len(batch))
	b.largest = max(b.largest, len(batch))
	b.running--
	var next *Stream
	if len(b.queue) > 0 {
		next = b.queue[0]
		b.running++
		next.batch = b.takeFront(nil, b.max)
	} else if b.running == 0 {
		b.idle.Broadcast()
	}
	b.mu.Unlock()
	for _, o := range batch {
		if o != s {
			o.wake <- false
		}
	}
	if next != nil {
		next.wake <- true
	}
	return s.prob, s.err
}

// takeFront appends up to n windows from the front of the queue to batch; b.mu is held.
func (b *batcher) takeFront(batch []*Stream, n int) []*Stream {
	n = min(len(b.queue), n)
	batch = append(batch, b.queue[:n]...)
	rest := copy(b.queue, b.queue[n:])
	clear(b.queue[rest:])
	b.queue = b.queue[:rest]
	return batch
}

// runBatch runs batch's windows and leaves each stream's probability, error and next state in it.
func (b *batcher) runBatch(batch []*Stream) {
	if len(batch) == 1 {
		s := batch[0]
		s.prob, s.err = s.runAlone()
		return
	}
	m := b.model
	r, err := b.rows(len(batch))
	if err == nil {
		n := len(batch)
		x, st := r.input.GetData(), r.state.GetData()
		for i, s := range batch {
			copy(x[i*(contextSamples+WindowSamples):], s.input.GetData())
			packState(st, s.state.GetData(), n, i)
		}
		err = m.runBatched(r)
		if err == nil {
			out, stN := r.output.GetData(), r.stateN.GetData()
			for i, s := range batch {
				unpackState(s.state.GetData(), stN, n, i)
				s.prob, s.err = out[i], nil
			}
		}
		b.release(r)
	}
	if err != nil {
		for _, s := range batch {
			s.prob, s.err = 0, fmt.Errorf("run silero vad window %d (batch of %d): %w", s.window, len(batch), err)
		}
	}
}

// packState writes one stream's state [2, 1, 128] as row i of a batch's [2, n, 128].
func packState(dst, src []float32, n, i int) {
	for l := range 2 {
		copy(dst[(l*n+i)*128:(l*n+i+1)*128], src[l*128:(l+1)*128])
	}
}

// unpackState reads row i of a batch's [2, n, 128] into one stream's [2, 1, 128].
func unpackState(dst, src []float32, n, i int) {
	for l := range 2 {
		copy(dst[l*128:(l+1)*128], src[(l*n+i)*128:(l*n+i+1)*128])
	}
}

// rows lends a set of tensors for n windows, made on first use and kept for the next batch of n.
func (b *batcher) rows(n int) (*rows, error) {
	b.mu.Lock()
	if l := b.free[n]; len(l) > 0 {
		r := l[len(l)-1]
		b.free[n] = l[:len(l)-1]
		b.mu.Unlock()
		return r, nil
	}
	b.mu.Unlock()
	r := &rows{n: n}
	var err error
	if r.input, err = ort.NewEmptyTensor[float32](ort.NewShape(int64(n), contextSamples+WindowSamples)); err == nil {
		if r.state, err = ort.NewEmptyTensor[float32](ort.NewShape(2, int64(n), 128)); err == nil {
			if r.stateN, err = ort.NewEmptyTensor[float32](ort.NewShape(2, int64(n), 128)); err == nil {
				r.output, err = ort.NewEmptyTensor[float32](ort.NewShape(int64(n), 1))
			}
		}
	}
	if err != nil {
		r.destroy()
		return nil, fmt.Errorf("silero vad batch of %d: %w", n, err)
	}
	return r, nil
}

func (b *batcher) release(r *rows) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		r.destroy()
		return
	}
	b.free[r.n] = append(b.free[r.n], r)
}

func (r *rows) destroy() {
	for _, t := range []*ort.Tensor[float32]{r.input, r.state, r.stateN, r.output} {
		if t != nil {
			t.Destroy()
		}
	}
}

// close refuses new windows, waits for the Runs in progress and those queued behind them, and
// frees the packed tensors.
func (b *batcher) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for b.running > 0 || len(b.queue) > 0 {
		b.idle.Wait()
	}
	for _, l := range b.free {
		for _, r := range l {
			r.destroy()
		}
	}
	b.free = nil
}
