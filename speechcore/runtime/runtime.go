// Package runtime owns the process's one ONNX Runtime environment: which shared library is
// loaded, which device and execution provider serve, and how sessions are opened on it.
// Every Whisper and Kokoro session is opened here; nothing else in voiced calls
// onnxruntime_go's environment functions.
package runtime

import (
	"errors"
	"fmt"
	"os"
	"sync"

	ort "github.com/yalue/onnxruntime_go"
)

// Device names accepted by Config.Device.
const (
	DeviceCPU  = "cpu"
	DeviceCUDA = "cuda"
)

// Config says how the environment is set up. The zero value is not valid: LibPath is required.
type Config struct {
	// LibPath is the libonnxruntime shared library to load (make setup places the CPU build).
	LibPath string
	// Device is "cpu" (default when empty) or "cuda". CUDA needs a GPU build of the library; there
	// is no silent fallback to CPU.
	Device string
	// CUDADeviceID picks the GPU when Device is "cuda".
	CUDADeviceID int
	// CacheMemory is where tensors bound between runs live (the Whisper decoder's KV cache and
	// the encoder's output): "" for the provider's device (CUDA device memory under "cuda"), or
	// CacheMemoryCPU for host memory whatever the device (see Env.CacheMemory).
	CacheMemory string
	// IntraOpThreads and InterOpThreads bound ONNX Runtime's thread pools; 0 lets it choose.
	IntraOpThreads int
	InterOpThreads int
}

// CacheMemoryCPU is Config.CacheMemory's host-memory choice.
const CacheMemoryCPU = "cpu"

// Sentinel errors, matched with errors.Is.
var (
	ErrLibraryMissing    = errors.New("onnx runtime library not found")
	ErrUnknownDevice     = errors.New("unknown device")
	ErrCUDAUnavailable   = errors.New("cuda execution provider unavailable")
	ErrAlreadyOpen       = errors.New("onnx runtime environment already open in this process")
	ErrEnvironmentClosed = errors.New("onnx runtime environment closed")
)

// Env is the opened environment. It is safe for concurrent use; each session it opens is owned by
// whoever opened it.
type Env struct {
	cfg      Config
	provider string
	mu       sync.Mutex
	closed   bool
}

var (
	processMu  sync.Mutex
	processEnv *Env
)

// Open loads the library and initialises the environment. ONNX Runtime has one environment per
// process, so a second Open before Close fails with ErrAlreadyOpen; Shared returns the open one.
func Open(cfg Config) (*Env, error) {
	if cfg.Device == "" {
		cfg.Device = DeviceCPU
	}
	if cfg.Device != DeviceCPU && cfg.Device != DeviceCUDA {
		return nil, fmt.Errorf("%w %q: use cpu or cuda", ErrUnknownDevice, cfg.Device)
	}
	if cfg.CacheMemory != "" && cfg.CacheMemory != CacheMemoryCPU {
		return nil, fmt.Errorf("%w: cache memory %q: use \"\" (the device's) or cpu", ErrUnknownDevice, cfg.CacheMemory)
	}
	if cfg.IntraOpThreads < 0 || cfg.InterOpThreads < 0 {
		return nil, fmt.Errorf("onnx runtime threads must be >= 0 (intra %d, inter %d)", cfg.IntraOpThreads, cfg.InterOpThreads)
	}
	if cfg.LibPath == "" {
		return nil, fmt.Errorf("%w: no library path given (--ort-lib / VOICED_ORT_LIB; make setup places one)", ErrLibraryMissing)
	}
	if _, err := os.Stat(cfg.LibPath); err != nil {
		return nil, fmt.Errorf("%w at %s (--ort-lib; make setup places the CPU build): %v", ErrLibraryMissing, cfg.LibPath, err)
	}
	processMu.Lock()
	defer processMu.Unlock()
	if processEnv != nil {
		return nil, ErrAlreadyOpen
	}
	ort.SetSharedLibraryPath(cfg.LibPath)
	if err := ort.InitializeEnvironment(ort.WithLogLevelError()); err != nil {
		return nil, fmt.Errorf("initialise onnx runtime from %s: %w", cfg.LibPath, err)
	}
	if err := openBinding(cfg.LibPath); err != nil {
		ort.DestroyEnvironment()
		return nil, err
	}
	e := &Env{cfg: cfg, provider: "cpu"}
	if cfg.Device == DeviceCUDA {
		// Prove the provider exists now, at start, rather than at the first request.
		opts, err := e.sessionOptions()
		if err != nil {
			ort.DestroyEnvironment()
			return nil, err
		}
		opts.Destroy()
		e.provider = "cuda"
	}
	processEnv = e
	return e, nil
}

// Shared returns the environment this process opened, or nil.
func Shared() *Env {
	processMu.Lock()
	defer processMu.Unlock()
	return processEnv
}

// Device reports the configured device ("cpu" or "cuda").
func (e *Env) Device() string { return e.cfg.Device }

// ExecutionProvider reports the provider sessions are created with ("cpu" or "cuda").
func (e *Env) ExecutionProvider() string { return e.provider }

// Version reports the loaded library's version string.
func (e *Env) Version() string { return ort.GetVersion() }

func (e *Env) sessionOptions() (*ort.SessionOptions, error) {
	opts, err := ort.NewSessionOptions()
	if err != nil {
		return nil, fmt.Errorf("create session options: %w", err)
	}
	if e.cfg.IntraOpThreads > 0 {
		if err := opts.SetIntraOpNumThreads(e.cfg.IntraOpThreads); err != nil {
			opts.Destroy()
			return nil, fmt.Errorf("set intra-op threads: %w", err)
		}
	}
	if e.cfg.InterOpThreads > 0 {
		if err := opts.SetInterOpNumThreads(e.cfg.InterOpThreads); err != nil {
			opts.Destroy()
			return nil, fmt.Errorf("set inter-op threads: %w", err)
		}
	}
	if e.cfg.Device == DeviceCUDA {
		cuda, err := ort.NewCUDAProviderOptions()
		if err != nil {
			opts.Destroy()
			return nil, fmt.Errorf("%w (the library at %s has no CUDA provider; name a GPU build with --ort-lib): %v", ErrCUDAUnavailable, e.cfg.LibPath, err)
		}
		defer cuda.Destroy()
		if err := cuda.Update(map[string]string{
			"device_id":              fmt.Sprint(e.cfg.CUDADeviceID),
			"cudnn_conv_algo_search": "HEURISTIC",
		}); err != nil {
			opts.Destroy()
			return nil, fmt.Errorf("%w: configure: %v", ErrCUDAUnavailable, err)
		}
		if err := opts.AppendExecutionProviderCUDA(cuda); err != nil {
			opts.Destroy()
			return nil, fmt.Errorf("%w (the library at %s cannot serve CUDA; name a GPU build with --ort-lib): %v", ErrCUDAUnavailable, e.cfg.LibPath, err)
		}
	}
	return opts, nil
}

// Session is one ONNX model opened on the environment, with its declared inputs and outputs.
// Read names and dtypes from Inputs/Outputs; never assume them.
type Session struct {
	Path    string
	Inputs  []ort.InputOutputInfo
	Outputs []ort.InputOutputInfo
	*ort.DynamicAdvancedSession
}

// Inspect reads a model's declared inputs and outputs without opening a session.
func (e *Env) Inspect(path string) (inputs, outputs []ort.InputOutputInfo, err error) {
	inputs, outputs, err = ort.GetInputOutputInfo(path)
	if err != nil {
		return nil, nil, fmt.Errorf("inspect %s: %w", path, err)
	}
	return inputs, outputs, nil
}

// NewSession opens path with every declared input, and the named outputs (all declared outputs
// when outputs is nil).
func (e *Env) NewSession(path string, outputs []string) (*Session, error) {
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return nil, ErrEnvironmentClosed
	}
	ins, outs, err := e.Inspect(path)
	if err != nil {
		return nil, err
	}
	inNames := make([]string, len(ins))
	for i, in := range ins {
		inNames[i] = in.Name
	}
	if outputs == nil {
		for _, o := range outs {
			outputs = append(outputs, o.Name)
		}
	}
	opts, err := e.sessionOptions()
	if err != nil {
		return nil, err
	}
	defer opts.Destroy()
	s, err := ort.NewDynamicAdvancedSession(path, inNames, outputs, opts)
	if err != nil {
		return nil, fmt.Errorf("open session %s: %w", path, err)
	}
	return &Session{Path: path, Inputs: ins, Outputs: outs, DynamicAdvancedSession: s}, nil
}

// Input returns the declared input called name.
func (s *Session) Input(name string) (ort.InputOutputInfo, bool) {
	for _, in := range s.Inputs {
		if in.Name == name {
			return in, true
		}
	}
	return ort.InputOutputInfo{}, false
}

// Output returns the declared output called name.
func (s *Session) Output(name string) (ort.InputOutputInfo, bool) {
	for _, o := range s.Outputs {
		if o.Name == name {
			return o, true
		}
	}
	return ort.InputOutputInfo{}, false
}

// Close destroys the environment. Sessions must be destroyed first.
func (e *Env) Close() error {
	processMu.Lock()
	defer processMu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	if processEnv == e {
		processEnv = nil
	}
	return ort.DestroyEnvironment()
}

// LibPathFromEnv returns VOICED_ORT_LIB, which the Makefile sets for tests and runs.
func LibPathFromEnv() string { return os.Getenv("VOICED_ORT_LIB") }
