package speechcore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/voiced/voiced/speechcore/assets"
	"github.com/voiced/voiced/speechcore/kokoro"
	"github.com/voiced/voiced/speechcore/runtime"
	"github.com/voiced/voiced/speechcore/squelch"
	"github.com/voiced/voiced/speechcore/whisper"
)

// LatencyBarMs is the first-token / first-frame bar the doors are held to (reported by health).
const LatencyBarMs = 300

// Config says how the speech service starts. Zero values mean the documented defaults.
type Config struct {
	// AssetsDir is the speech-asset mount; "" means nothing is mounted: the server serves and every
	// speech route answers 503 speech_assets_not_mounted.
	AssetsDir string
	// Runtime is the ONNX Runtime environment (library path, device, threads).
	Runtime runtime.Config
	// Env, when set, is an environment already open (tests that share one); the service uses it
	// instead of opening Runtime, and does not close it.
	Env *runtime.Env
	// Log receives the service's start-up logs (default slog.Default()).
	Log *slog.Logger
	// Language is the language Whisper hears when a request names none (whisper.Options.Language:
	// "" is English, "auto" detects every final's language at one extra decoder pass).
	Language string
	// WhisperDecoders is how many transcriptions run at once (whisper.Options.Decoders; 0: 1),
	// each with its own copy of the model's sessions.
	WhisperDecoders int
}

// Service owns the speech models of the process: the verified mount, the ONNX Runtime
// environment and the engines, loaded and warmed once. The doors that serve them (package
// speechdoor) and the conversation's seams read it; only Start and Close change it.
type Service struct {
	cfg Config
	log *slog.Logger

	// Set by Start, read-only afterwards.
	Mount *assets.Mount // nil when not mounted
	Env   *runtime.Env
	// Whisper is the transcription engine (loadWhisper in load.go); nil until loaded.
	Whisper *whisper.Engine
	// Kokoro is the synthesis engine (loadKokoro in load.go); nil until loaded.
	Kokoro *kokoro.Engine
	// Silero is the shared Silero VAD model (vad.go): squelches and turn detectors open a Stream
	// on it; nil until loaded.
	Silero *squelch.Model
	// Per-model load figures for /v1/speech/health, filled by the loaders in Start.
	Transcription ModelStats
	Synthesis     ModelStats
	VAD           ModelStats

	metrics *metrics // metrics.go; Collectors hands them out

	warm    atomic.Bool
	ownsEnv bool // Start opened Env, so Close closes it

	mu     sync.Mutex
	closed bool
}

// ModelStats are what this process measured of one model at start. Zero until it is loaded.
type ModelStats struct {
	Loaded             bool
	LoadMs             float64
	WarmupMs           float64
	ResidentDeltaBytes int64
	// QueueDepth reports the model's queued requests now; nil reports 0.
	QueueDepth func() int
}

// New returns a service that has not started.
func New(cfg Config) (*Service, error) {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	s := &Service{cfg: cfg, log: cfg.Log}
	s.metrics = newMetrics(s)
	return s, nil
}

// Start opens the mount (a refusal refuses the start), opens the ONNX Runtime environment, loads
// every engine and runs its warm-up pass. Warm is true only after every model has warmed up;
// Start returns before the listener is bound, so a listening server is a warm one.
func (s *Service) Start(ctx context.Context) error {
	if s.cfg.AssetsDir != "" {
		m, err := assets.Open(s.cfg.AssetsDir)
		if err != nil {
			return fmt.Errorf("speech assets: %w", err)
		}
		s.Mount = m
		s.log.Info("speech assets verified", "mount", m.Dir, "version", m.Version, "filesProved", m.FilesProved(), "voices", m.Voices())
	} else {
		s.log.Warn("no speech assets mounted: speech routes answer 503 speech_assets_not_mounted (set --speech-assets or VOICED_SPEECH_ASSETS)")
	}
	env := s.cfg.Env
	if env == nil {
		var err error
		if env, err = runtime.Open(s.cfg.Runtime); err != nil {
			return fmt.Errorf("onnx runtime: %w", err)
		}
		s.ownsEnv = true
	}
	s.Env = env
	s.log.Info("onnx runtime open", "version", env.Version(), "device", env.Device(), "executionProvider", env.ExecutionProvider())
	if s.Mount == nil {
		return nil
	}
	if err := s.loadModels(ctx); err != nil {
		return err
	}
	// Warm only when every model the doors need is loaded and warmed: a partial set is not warm.
	if s.Transcription.Loaded && s.Synthesis.Loaded && s.VAD.Loaded {
		s.warm.Store(true)
	} else {
		s.log.Warn("speech models not all loaded: doors answer 503 speech_not_warm",
			"transcription", s.Transcription.Loaded, "synthesis", s.Synthesis.Loaded, "vad", s.VAD.Loaded)
	}
	return nil
}

// loadModels loads and warms each engine, measuring load time, warm-up time and the VmRSS delta.
// The Whisper and Kokoro engines and the squelch model are wired here as their packages land.
func (s *Service) loadModels(ctx context.Context) error {
	if err := s.loadVAD(ctx); err != nil {
		return err
	}
	if err := s.loadKokoro(ctx); err != nil {
		return err
	}
	if err := s.loadWhisper(ctx); err != nil {
		return err
	}
	return ctx.Err()
}

// Close releases the engines and the runtime environment. The doors that use them (their
// sockets and transcripts) must have ended first.
func (s *Service) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.warm.Store(false)
	var errs []error
	errs = append(errs, s.closeKokoro())
	errs = append(errs, s.closeWhisper())
	errs = append(errs, s.closeVAD())
	if s.Env != nil && s.ownsEnv {
		errs = append(errs, s.Env.Close())
	}
	return errors.Join(errs...)
}

// Mounted reports whether a verified mount is open.
func (s *Service) Mounted() bool { return s.Mount != nil }

// Warm reports whether every model has loaded and run its warm-up pass.
func (s *Service) Warm() bool { return s.warm.Load() }

// Ready returns ErrNotMounted or ErrNotWarm when a speech door cannot serve, nil when it can.
func (s *Service) Ready() error {
	if s.Mount == nil {
		return ErrNotMounted
	}
	if !s.warm.Load() {
		return ErrNotWarm
	}
	return nil
}
