package squelch

import (
	"fmt"
	"os"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/voiced/voiced/speechcore/runtime"
)

// Silero's streaming geometry at 16 kHz (docs/models.md §3).
const (
	// SampleRate is the only rate the squelch takes; resample before pushing.
	SampleRate = 16000
	// WindowSamples is one Silero window: 512 new samples, 32 ms.
	WindowSamples = 512
	// contextSamples of the previous window are fed ahead of each new one.
	contextSamples = 64
	stateSize      = 2 * 1 * 128
)

// Model is one opened Silero VAD session. Any number of Streams share it: ONNX Runtime's Run is
// safe for concurrent use and each Stream owns its own tensors and recurrent state.
type Model struct {
	path    string
	session *ort.DynamicAdvancedSession // input fixed at [1, 576] when specialised
	batched *ort.DynamicAdvancedSession // input [batch, 576]; nil when the graph is run as shipped
	hasSR   bool
	batch   *batcher
}

// Load opens the Silero VAD export at path on env (runtime.Shared() when env is nil). It always
// runs on the CPU with one thread: a 32 ms window is far too small to repay a GPU round trip or a
// thread pool's wake-up, and the caller's goroutine is the one core it costs.
func Load(env *runtime.Env, path string) (*Model, error) {
	return load(env, path, true)
}

func load(env *runtime.Env, path string, specialised bool) (*Model, error) {
	if env == nil {
		env = runtime.Shared()
	}
	if env == nil || !ort.IsInitialized() {
		return nil, fmt.Errorf("load silero vad: %w (open speechcore/runtime first)", ErrNoRuntime)
	}
	if path == "" {
		return nil, fmt.Errorf("load silero vad: %w: no model path (the mount's models/silero-vad/silero_vad.onnx)", ErrModel)
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("load silero vad: %w: %v", ErrModel, err)
	}
	ins, outs, err := env.Inspect(path)
	if err != nil {
		return nil, fmt.Errorf("load silero vad: %w: %v", ErrModel, err)
	}
	declared := func(infos []ort.InputOutputInfo, name string) bool {
		for _, info := range infos {
			if info.Name == name {
				return true
			}
		}
		return false
	}
	for _, name := range []string{"input", "state"} {
		if !declared(ins, name) {
			return nil, fmt.Errorf("load silero vad: %w: %s declares no input %q (want a Silero VAD v5/v6 export)", ErrModel, path, name)
		}
	}
	for _, name := range []string{"output", "stateN"} {
		if !declared(outs, name) {
			return nil, fmt.Errorf("load silero vad: %w: %s declares no output %q (want a Silero VAD v5/v6 export)", ErrModel, path, name)
		}
	}
	onnx, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load silero vad: %w: %v", ErrModel, err)
	}
	m := &Model{path: path, hasSR: declared(ins, "sr")}
	m.batch = newBatcher(m)
	var batchedONNX []byte
	if m.hasSR && specialised {
		// A model this cannot rewrite still runs as shipped, one window a Run.
		if spec, err := specialise(onnx); err == nil {
			batchedONNX, _ = specialiseRows(onnx, 0)
			onnx, m.hasSR = spec, false
		}
	}
	inputs := []string{"input", "state"}
	if m.hasSR {
		inputs = append(inputs, "sr")
	}
	opts, err := ort.NewSessionOptions()
	if err != nil {
		return nil, fmt.Errorf("load silero vad: session options: %w", err)
	}
	defer opts.Destroy()
	if err := opts.SetIntraOpNumThreads(1); err != nil {
		return nil, fmt.Errorf("load silero vad: intra-op threads: %w", err)
	}
	if err := opts.SetInterOpNumThreads(1); err != nil {
		return nil, fmt.Errorf("load silero vad: inter-op threads: %w", err)
	}
	m.session, err = ort.NewDynamicAdvancedSessionWithONNXData(onnx, inputs, []string{"output", "stateN"}, opts)
	if err != nil {
		return nil, fmt.Errorf("load silero vad: %w: open %s: %v", ErrModel, path, err)
	}
	if batchedONNX != nil {
		// Batches run on the graph with a symbolic batch: at one row it costs ~10 % more than the
		// graph fixed at 1, which a window alone keeps (BenchmarkRunRows).
		if m.batched, err = ort.NewDynamicAdvancedSessionWithONNXData(batchedONNX, inputs, []string{"output", "stateN"}, opts); err != nil {
			m.batched = nil
		}
	}
	if m.batched == nil {
		m.batch.max = 1
	}
	return m, nil
}

// runBatched runs a batch's packed rows on the batched graph.
func (m *Model) runBatched(r *rows) error {
	return m.batched.Run([]ort.Value{r.input, r.state}, []ort.Value{r.output, r.stateN})
}

// Path reports the model file this Model was loaded from.
func (m *Model) Path() string { return m.path }

// Close releases the session. Every Stream on it must be closed first.
// Windows queued or running when Close is called finish first; later ones fail with ErrClosed.
func (m *Model) Close() error {
	if m == nil || m.session == nil {
		return nil
	}
	m.batch.close()
	err := m.session.Destroy()
	m.session = nil
	if m.batched != nil {
		m.batched.Destroy()
		m.batched = nil
	}
	return err
}

// Stream turns audio into one speech probability per 512-sample window, carrying the recurrent
// state, the 64-sample context and any part-window remainder from one Feed to the next, so
// pushes of any size give the same probabilities as one long push. A Stream has one owner.
type Stream struct {
	model  *Model
	input  *ort.Tensor[float32] // [1, 64+512]: context, then the window being filled
	state  *ort.Tensor[float32] // [2, 1, 128], fed in
	stateN *ort.Tensor[float32] // [2, 1, 128], written out; swapped with state after each run
	sr     *ort.Scalar[int64]
	output *ort.Tensor[float32] // [1, 1]
	filled int                  // samples of the current window already in input
	window int64                // windows run since the last Reset

	// The batcher's hand-off (batch.go): wake says whether a leader ran this stream's window
	// (false) or handed it the lead of batch (true); prob and err are the window's result.
	wake  chan bool
	batch []*Stream
	prob  float32
	err   error
}

// NewStream starts a stream at silence: zero state, zero context.
func (m *Model) NewStream() (*Stream, error) {
	s := &Stream{model: m, wake: make(chan bool, 1)}
	var err error
	if s.input, err = ort.NewEmptyTensor[float32](ort.NewShape(1, contextSamples+WindowSamples)); err != nil {
		return nil, fmt.Errorf("new vad stream: %w", err)
	}
	if s.state, err = ort.NewEmptyTensor[float32](ort.NewShape(2, 1, 128)); err != nil {
		s.Close()
		return nil, fmt.Errorf("new vad stream: %w", err)
	}
	if s.stateN, err = ort.NewEmptyTensor[float32](ort.NewShape(2, 1, 128)); err != nil {
		s.Close()
		return nil, fmt.Errorf("new vad stream: %w", err)
	}
	if s.output, err = ort.NewEmptyTensor[float32](ort.NewShape(1, 1)); err != nil {
		s.Close()
		return nil, fmt.Errorf("new vad stream: %w", err)
	}
	if m.hasSR {
		if s.sr, err = ort.NewScalar[int64](SampleRate); err != nil {
			s.Close()
			return nil, fmt.Errorf("new vad stream: %w", err)
		}
	}
	m.batch.streams.Add(1)
	return s, nil
}

// Feed runs every window pcm completes and calls emit with each window's speech probability, in
// order. Samples that do not complete a window wait for the next Feed.
func (s *Stream) Feed(pcm []float32, emit func(prob float32)) error {
	x := s.input.GetData()
	for len(pcm) > 0 {
		n := copy(x[contextSamples+s.filled:], pcm)
		s.filled += n
		pcm = pcm[n:]
		if s.filled < WindowSamples {
			return nil
		}
		prob, err := s.run()
		if err != nil {
			return err
		}
		copy(x[:contextSamples], x[WindowSamples:]) // the window's last 64 samples lead the next
		s.filled = 0
		s.window++
		emit(prob)
	}
	return nil
}

// run runs the window in s.input, batched with other streams' windows when they are waiting.
func (s *Stream) run() (float32, error) {
	return s.model.batch.run(s)
}

// runAlone runs the window in s.input on its own, on the stream's own tensors.
func (s *Stream) runAlone() (float32, error) {
	if s.model.session == nil {
		return 0, fmt.Errorf("run silero vad: %w", ErrClosed)
	}
	inputs := []ort.Value{s.input, s.state}
	if s.sr != nil {
		inputs = append(inputs, s.sr)
	}
	if err := s.model.session.Run(inputs, []ort.Value{s.output, s.stateN}); err != nil {
		return 0, fmt.Errorf("run silero vad window %d: %w", s.window, err)
	}
	s.state, s.stateN = s.stateN, s.state
	return s.output.GetData()[0], nil
}

// Windows reports how many windows have run since the stream started or was last Reset.
func (s *Stream) Windows() int64 { return s.window }

// Pending reports the samples waiting for the rest of their window.
func (s *Stream) Pending() int { return s.filled }

// Window is the samples each probability covers (WindowSamples).
func (s *Stream) Window() int { return WindowSamples }

// Reset returns the stream to silence: zero state and context, no pending samples.
func (s *Stream) Reset() {
	clear(s.input.GetData())
	clear(s.state.GetData())
	s.filled = 0
	s.window = 0
}

// Close releases the stream's tensors.
func (s *Stream) Close() error {
	if s.input != nil && s.output != nil && (s.sr != nil || !s.model.hasSR) {
		s.model.batch.streams.Add(-1)
	}
	for _, t := range []*ort.Tensor[float32]{s.input, s.state, s.stateN, s.output} {
		if t != nil {
			t.Destroy()
		}
	}
	if s.sr != nil {
		s.sr.Destroy()
	}
	s.input, s.state, s.stateN, s.output, s.sr = nil, nil, nil, nil, nil
	return nil
}
