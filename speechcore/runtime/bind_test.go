package runtime

import (
	"errors"
	"math"
	"os"
	"slices"
	"testing"

	ort "github.com/yalue/onnxruntime_go"
)

// TestBindingFeedsOutputsBack runs Silero (a recurrent model: stateN is the next call's state)
// eight chunks twice: through onnxruntime_go's Run, which copies every output into Go memory,
// and through a Binding that binds stateN to cache memory and feeds ONNX Runtime's own value
// back as the next state. The speech probabilities must agree bit for bit, and the state bound
// at each call must be the value the call before handed back.
func TestBindingFeedsOutputsBack(t *testing.T) {
	lib, model := LibPathFromEnv(), os.Getenv("VOICED_SILERO_MODEL")
	if lib == "" || model == "" {
		t.Fatal("VOICED_ORT_LIB / VOICED_SILERO_MODEL unset: run the tests through make (make test)")
	}
	env, err := Open(Config{LibPath: lib, IntraOpThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	s, err := env.NewSession(model, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	const chunks, n = 8, 512
	pcm := make([]float32, chunks*n)
	for i := range pcm {
		pcm[i] = float32(0.4 * math.Sin(float64(i)*0.07) * math.Sin(float64(i)*0.0011))
	}
	newInputs := func() (chunk, state *ort.Tensor[float32], sr *ort.Tensor[int64]) {
		chunk, err := ort.NewTensor(ort.NewShape(1, n), make([]float32, n))
		if err != nil {
			t.Fatal(err)
		}
		state, err = ort.NewTensor(ort.NewShape(2, 1, 128), make([]float32, 256))
		if err != nil {
			t.Fatal(err)
		}
		sr, err = ort.NewTensor(ort.NewShape(1), []int64{16000})
		if err != nil {
			t.Fatal(err)
		}
		return chunk, state, sr
	}
	chunk, state, sr := newInputs()
	defer chunk.Destroy()
	defer state.Destroy()
	defer sr.Destroy()
	byName := func(chunk, state ort.Value, sr ort.Value) []ort.Value {
		in := make([]ort.Value, len(s.Inputs))
		for i, d := range s.Inputs {
			switch d.Name {
			case "input":
				in[i] = chunk
			case "state":
				in[i] = state
			case "sr":
				in[i] = sr
			default:
				t.Fatalf("silero input %q", d.Name)
			}
		}
		return in
	}
	outIndex := func(name string) int {
		for i, o := range s.Outputs {
			if o.Name == name {
				return i
			}
		}
		t.Fatalf("silero has no output %q", name)
		return -1
	}
	probIdx, stateIdx := outIndex("output"), outIndex("stateN")

	var copied []float32
	for c := 0; c < chunks; c++ {
		copy(chunk.GetData(), pcm[c*n:(c+1)*n])
		out := make([]ort.Value, len(s.Outputs))
		if err := s.Run(byName(chunk, state, sr), out); err != nil {
			t.Fatal(err)
		}
		copied = append(copied, out[probIdx].(*ort.Tensor[float32]).GetData()[0])
		copy(state.GetData(), out[stateIdx].(*ort.Tensor[float32]).GetData())
		for _, o := range out {
			o.Destroy()
		}
	}

	host, err := env.HostMemory()
	if err != nil {
		t.Fatal(err)
	}
	defer host.Release()
	cache, err := env.CacheMemory()
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Release()
	if cache.String() != "Cpu:0" || cache.OnDevice() {
		t.Fatalf("cache memory on the CPU provider: %s", cache)
	}
	b, err := s.NewBinding()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Destroy()
	chunk2, zero, sr2 := newInputs()
	defer chunk2.Destroy()
	defer zero.Destroy()
	defer sr2.Destroy()
	if err := b.BindInput("sr", InputOf(sr2)); err != nil {
		t.Fatal(err)
	}
	if err := b.BindInput("nope", InputOf(sr2)); !errors.Is(err, ErrBinding) {
		t.Fatalf("binding an undeclared name: %v", err)
	}
	var bound []float32
	var prev Value // the last call's stateN, ONNX Runtime's own
	defer func() { prev.Release() }()
	out := make([]Value, 2)
	for c := 0; c < chunks; c++ {
		copy(chunk2.GetData(), pcm[c*n:(c+1)*n])
		if err := b.BindInput("input", InputOf(chunk2)); err != nil {
			t.Fatal(err)
		}
		stateIn := InputOf(zero)
		if !prev.IsNil() {
			stateIn = prev.Input()
		}
		if err := b.BindInput("state", stateIn); err != nil {
			t.Fatal(err)
		}
		b.ClearOutputs()
		if err := b.BindOutput("output", host); err != nil {
			t.Fatal(err)
		}
		if err := b.BindOutput("stateN", cache); err != nil {
			t.Fatal(err)
		}
		if err := b.Run(nil, out[:1]); !errors.Is(err, ErrBinding) {
			t.Fatalf("Run with room for 1 of 2 bound outputs: %v", err)
		}
		if err := b.Run(nil, out); err != nil {
			t.Fatal(err)
		}
		prob, shape, err := out[0].Float32s()
		if err != nil || len(prob) != 1 || !slices.Equal(shape, []int64{1, 1}) {
			t.Fatalf("output shape %v (%d values): %v", shape, len(prob), err)
		}
		bound = append(bound, prob[0])
		out[0].Release()
		st, shape, err := out[1].Float32s()
		if err != nil || len(st) != 256 || !slices.Equal(shape, []int64{2, 1, 128}) {
			t.Fatalf("stateN shape %v: %v", shape, err)
		}
		if c > 0 && stateIn != prev.Input() {
			t.Fatal("the state bound is not the value the last call handed back")
		}
		prev.Release()
		prev = out[1]
	}
	b.Clear()
	for c := range copied {
		if math.Float32bits(copied[c]) != math.Float32bits(bound[c]) {
			t.Fatalf("chunk %d: bound run %v, copying run %v (all: %v vs %v)", c, bound[c], copied[c], bound, copied)
		}
	}
	if slices.Equal(copied[:1], copied[chunks-1:]) {
		t.Fatalf("the state changes nothing here: %v", copied)
	}
}

// TestCacheMemoryFollowsTheDevice: under Device "cuda" the cache is CUDA device memory (the
// configured GPU), unless Config.CacheMemory says cpu; an unknown choice is refused at Open.
func TestCacheMemoryFollowsTheDevice(t *testing.T) {
	if _, err := Open(Config{LibPath: "x", CacheMemory: "gpu"}); !errors.Is(err, ErrUnknownDevice) {
		t.Fatalf("CacheMemory gpu: %v", err)
	}
	lib := LibPathFromEnv()
	env, err := Open(Config{LibPath: lib})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	for _, c := range []struct {
		cfg      Config
		want     string
		onDevice bool
	}{
		{Config{Device: DeviceCPU}, "Cpu:0", false},
		{Config{Device: DeviceCUDA, CUDADeviceID: 1}, "Cuda:1", true},
		{Config{Device: DeviceCUDA, CacheMemory: CacheMemoryCPU}, "Cpu:0", false},
	} {
		e := &Env{cfg: c.cfg}
		m, err := e.CacheMemory()
		if err != nil {
			t.Fatal(err)
		}
		if m.String() != c.want || m.OnDevice() != c.onDevice {
			t.Errorf("%+v: cache memory %s (on device %v), want %s", c.cfg, m, m.OnDevice(), c.want)
		}
		m.Release()
	}
}
