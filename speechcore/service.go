package speechcore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/speechcore/assets"
	"github.com/voiced/voiced/speechcore/kokoro"
	"github.com/voiced/voiced/speechcore/runtime"
	"github.com/voiced/voiced/speechcore/squelch"
	"github.com/voiced/voiced/speechcore/whisper"
)

// DefaultMaxSessions is the speech session cap when Config.MaxSessions is 0.
const DefaultMaxSessions = 128

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
	// MaxSessions caps concurrent speech sessions (default DefaultMaxSessions).
	MaxSessions int
	// door.Sockets is the hijacked-socket registry shared with the rest of the server (default: a new one).
	Sockets *door.Sockets
	// Peers lets several nodes serve one half-duplex transcript (TranscriptDoor); nil:
	// transcripts are this node's alone. SetPeers sets it after New.
	Peers door.Peers
	// Origins is the origin policy (--allow-origin, parsed once): a browser page from elsewhere is
	// refused 403 origin_not_allowed before the upgrade; clients without an Origin header (not
	// browsers) are not affected.
	Origins door.Origins
	// Log receives the service's start-up and refusal logs (default slog.Default()).
	Log *slog.Logger
	// Usage meters the raw doors' seconds under UsagePrincipal (usage.go); nil meters nothing.
	Usage UsageRecorder
	// SocketIdle closes a raw-door socket that sent nothing for this long while nothing was in
	// flight for it, with an idle_timeout error frame and 1008 (default DefaultSocketIdle).
	SocketIdle time.Duration
	// TextBudget bounds the client text, in bytes, the speaking doors hold on the node at once
	// (default DefaultTextBudget); text past it is refused text_budget_full.
	TextBudget int64
}

// Service owns the speech side of the process: the verified mount, the ONNX Runtime environment,
// the engines, the session gate and the hijacked-socket registry. Doors read it; only Start and
// Close change it.
type Service struct {
	cfg Config
	log *slog.Logger

	// Set by Start, read-only afterwards.
	Mount *assets.Mount // nil when not mounted
	Env   *runtime.Env
	// Whisper is the transcription engine (loadWhisper in hearing.go); nil until loaded.
	Whisper *whisper.Engine
	// Kokoro is the synthesis engine (loadKokoro in synthesize.go); nil until loaded.
	Kokoro *kokoro.Engine
	// transcripts holds the half-duplex transcripts (transcript.go); closeHearing ends them.
	transcripts *TranscriptDoor
	// Silero is the shared Silero VAD model (vad.go): squelches and turn detectors open a Stream
	// on it; nil until loaded.
	Silero *squelch.Model
	// Per-model load figures for /v1/speech/health, filled by the loaders in Start.
	Transcription ModelStats
	Synthesis     ModelStats
	VAD           ModelStats

	Gate    *door.Gate
	Sockets *door.Sockets

	usage   UsageRecorder // SetUsage, before Start; nil meters nothing
	text    *textBudget   // client text held by the speaking doors (textbudget.go)
	metrics *metrics      // metrics.go; Collectors hands them out

	warm    atomic.Bool
	ownsEnv bool // Start opened Env, so Close closes it

	mu     sync.Mutex
	doors  map[string]http.Handler // pattern -> door, from Handle
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

// New validates cfg and returns a service that has not started.
func New(cfg Config) (*Service, error) {
	if cfg.MaxSessions == 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	if cfg.SocketIdle == 0 {
		cfg.SocketIdle = DefaultSocketIdle
	}
	if cfg.SocketIdle < 0 {
		return nil, fmt.Errorf("speech: socket idle timeout must be > 0, got %v", cfg.SocketIdle)
	}
	if cfg.TextBudget == 0 {
		cfg.TextBudget = DefaultTextBudget
	}
	if cfg.TextBudget < 0 {
		return nil, fmt.Errorf("speech: text budget must be > 0, got %d", cfg.TextBudget)
	}
	if cfg.MaxSessions < 0 {
		return nil, fmt.Errorf("speech: max sessions must be > 0, got %d", cfg.MaxSessions)
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Sockets == nil {
		cfg.Sockets = door.NewSockets()
	}
	s := &Service{
		cfg:     cfg,
		log:     cfg.Log,
		Gate:    door.NewGate(cfg.MaxSessions, ErrSessionCap),
		Sockets: cfg.Sockets,
		usage:   cfg.Usage,
		doors:   map[string]http.Handler{},
		text:    &textBudget{limit: cfg.TextBudget},
	}
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

// Close releases the engines and the runtime environment. door.Sockets must have drained first.
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
	errs = append(errs, s.closeHearing()) // before closeVAD: transcripts' squelches use Silero
	errs = append(errs, s.closeVAD())
	if s.Env != nil && s.ownsEnv {
		errs = append(errs, s.Env.Close())
	}
	return errors.Join(errs...)
}

// TextHeld reports the bytes of client text the speaking doors hold now (TextBudget bounds it).
func (s *Service) TextHeld() int64 { return s.text.Held() }

// Mounted reports whether a verified mount is open.
func (s *Service) Mounted() bool { return s.Mount != nil }

// SetPeers lets several nodes serve one half-duplex transcript (Config.Peers); call it before
// Start.
func (s *Service) SetPeers(p door.Peers) { s.cfg.Peers = p }

// Warm reports whether every model has loaded and run its warm-up pass.
func (s *Service) Warm() bool { return s.warm.Load() }

// Router is where routes are put: *http.ServeMux, or the server's token-checking router.
type Router interface {
	Handle(pattern string, handler http.Handler)
}

// Handle claims a speech route for a door. Call it before Register; Register wraps the door with
// Guard, so the door itself runs only on a mounted, warm service.
func (s *Service) Handle(pattern string, door http.Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.doors[pattern]; dup {
		panic("speechcore: route registered twice: " + pattern)
	}
	s.doors[pattern] = door
}

// Register puts every speech route on r. A route whose door is not written yet answers
// 501 not_implemented when mounted; every speech route answers 503 speech_assets_not_mounted
// when nothing is mounted, and 503 speech_not_warm before the models are warm.
func (s *Service) Register(r Router) {
	s.routes()
	r.Handle("GET /v1/speech/health", http.HandlerFunc(s.serveHealth))
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, pattern := range SpeechRoutes {
		door, ok := s.doors[pattern]
		if !ok {
			door = notImplemented(pattern)
		}
		r.Handle(pattern, s.Guard(door))
	}
	for pattern, door := range s.doors {
		if !isSpeechRoute(pattern) {
			r.Handle(pattern, s.Guard(door))
		}
	}
}

// SpeechRoutes are the raw speech doors (SPEC §3). The conversation's routes (/v1/voice*,
// /v1/realtime*) are the session's; it wraps them with Guard itself.
var SpeechRoutes = []string{
	"GET /v1/transcribe",
	"GET /v1/synthesize",
	"GET /v1/speak/stream",
	"POST /v1/audio/transcriptions",
	"POST /v1/audio/speech",
	"POST /v1/audio/transcript",
	"POST /v1/audio/transcript/{id}",
	"DELETE /v1/audio/transcript/{id}",
}

func isSpeechRoute(pattern string) bool {
	for _, p := range SpeechRoutes {
		if p == pattern {
			return true
		}
	}
	return false
}

// Guard answers 503 speech_assets_not_mounted when nothing is mounted and 503 speech_not_warm
// before the models are warm; otherwise it hands the request to next.
func (s *Service) Guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.Ready(); err != nil {
			s.refuse(w, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

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

// ErrNotImplemented answers a speech route whose door is not built into this binary.
var ErrNotImplemented = &door.Refusal{Status: http.StatusNotImplemented, Name: "not_implemented",
	Message: "this door is not built into this voiced binary"}

func notImplemented(pattern string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		door.WriteError(w, door.Refuse(ErrNotImplemented, pattern+" is not built into this voiced binary"))
	})
}
