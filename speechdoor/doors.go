package speechdoor

import (
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/speechcore"
)

// DefaultMaxSessions is the speech session cap when Config.MaxSessions is 0.
const DefaultMaxSessions = 128

// ErrSessionCap refuses a raw-door socket or request past Config.MaxSessions.
var ErrSessionCap = door.NewRefusal(http.StatusTooManyRequests, "too_many_sessions",
	"the speech session cap is reached; retry later").WithRetryAfter(time.Second).WithReason(door.ReasonCap)

// Config says how the speech doors serve. Zero values mean the documented defaults.
type Config struct {
	// MaxSessions caps concurrent speech sessions (default DefaultMaxSessions).
	MaxSessions int
	// Sockets is the hijacked-socket registry shared with the rest of the server (default: a new one).
	Sockets *door.Sockets
	// Peers lets several nodes serve one half-duplex transcript (TranscriptDoor); nil:
	// transcripts are this node's alone. SetPeers sets it after New.
	Peers door.Peers
	// Origins is the origin policy (--allow-origin, parsed once): a browser page from elsewhere is
	// refused 403 origin_not_allowed before the upgrade; clients without an Origin header (not
	// browsers) are not affected.
	Origins door.Origins
	// Log receives the doors' refusal and failure logs (default slog.Default()).
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

// Doors serves the speech engines over HTTP and WebSocket: the raw speech doors
// (/v1/transcribe, /v1/synthesize, /v1/speak/stream, /v1/audio/*) and /v1/speech/health. It holds
// what the doors share — the session gate, the socket registry, the meter, the text budget, the
// open transcripts and the doors' series — and reads the engines from the speech Service, which
// it never starts or closes.
type Doors struct {
	cfg    Config
	log    *slog.Logger
	speech *speechcore.Service // the engines; read-only here

	Gate    *door.Gate
	Sockets *door.Sockets

	usage   UsageRecorder // SetUsage, before Register; nil meters nothing
	text    *textBudget   // client text held by the speaking doors (textbudget.go)
	metrics *metrics      // metrics.go; Collectors hands them out
	// transcripts holds the half-duplex transcripts (transcript.go); Close ends them.
	transcripts *TranscriptDoor

	mu    sync.Mutex
	doors map[string]http.Handler // pattern -> door, from Handle
}

// New validates cfg and returns the doors of speech, serving nothing until Register.
func New(speech *speechcore.Service, cfg Config) (*Doors, error) {
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
	d := &Doors{
		cfg:     cfg,
		log:     cfg.Log,
		speech:  speech,
		Gate:    door.NewGate(cfg.MaxSessions, ErrSessionCap),
		Sockets: cfg.Sockets,
		usage:   cfg.Usage,
		doors:   map[string]http.Handler{},
		text:    &textBudget{limit: cfg.TextBudget},
	}
	d.metrics = newMetrics(d)
	return d, nil
}

// Close ends the open transcripts (their decodes and squelches use the engines); call it once the
// sockets have drained and before the speech Service closes.
func (s *Doors) Close() {
	if s.transcripts != nil {
		s.transcripts.Shutdown()
	}
}

// TextHeld reports the bytes of client text the speaking doors hold now (TextBudget bounds it).
func (s *Doors) TextHeld() int64 { return s.text.Held() }

// SetPeers lets several nodes serve one half-duplex transcript (Config.Peers); call it before
// Register.
func (s *Doors) SetPeers(p door.Peers) { s.cfg.Peers = p }
