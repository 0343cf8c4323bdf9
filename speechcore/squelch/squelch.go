package squelch

import (
	"fmt"
	"time"

	"github.com/voiced/voiced/speechcore/runtime"
)

// Defaults for Config's zero values.
const (
	DefaultOpenThreshold  = 0.5
	DefaultCloseThreshold = 0.35
	// DefaultHang is the quiet a squelch waits out before it closes. reference/001 measured
	// "speech plus about 0.9 s per utterance" at LEAD 0.5 s with 250 ms pushes: the lead, half a
	// push of slack at each end and Silero's fall-off leave about 0.1–0.2 s for the hang. At
	// 0.2 s TestOverheadPerUtterance measures 0.81 s billed over the speech per utterance (five
	// pocketsphinx recordings between 8 s lulls: 80% of the stream not billed). A short hang
	// loses nothing: the pause it closes on comes back as LEAD when the next word opens the gate.
	DefaultHang = 200 * time.Millisecond
	// DefaultLead is the audio held back while closed and handed over by the push that opens:
	// reference/001 found that 0.5 s clips no word at any push alignment (TestSlidingWord).
	DefaultLead = 500 * time.Millisecond
	// DefaultConfirm is how long speech must hold at or above OpenThreshold before the gate opens.
	// The real model gives full-scale white noise lone windows up to 0.72, in runs of at most 3
	// windows (96 ms) over 600 s of it, while the shortest word measured (espeak "hi", the
	// pocketsphinx recordings) holds for 7 windows or more: 160 ms (5 windows) sits between.
	// The opening is later by that much, never the audio: LEAD hands the onset over.
	DefaultConfirm = 160 * time.Millisecond
)

// Off, given as Hang, Lead or Confirm, asks for none at all (their zero value means the default).
const Off time.Duration = -1

// Config configures a Squelch. Zero values take the defaults above.
type Config struct {
	// ModelPath is the Silero VAD export: the mount's models/silero-vad/silero_vad.onnx. Ignored
	// when Model is set.
	ModelPath string
	// Model, when set, is a loaded model shared with other squelches; the Squelch does not close it.
	Model *Model
	// Prober, when set, is where the squelch reads its speech probabilities instead of opening a
	// Stream on Model: a reader of a pass shared with a turn detector (turn.Shared), so Silero
	// runs once per window for both. The Squelch closes it; Model and ModelPath are not used.
	Prober Prober
	// Env is the ONNX Runtime environment to load ModelPath on; nil means runtime.Shared().
	Env *runtime.Env
	// OpenThreshold: a window whose speech probability reaches it opens the gate.
	OpenThreshold float32
	// CloseThreshold: windows below it count as quiet while open. Windows between the two
	// thresholds neither open the gate nor stop a hang already counting (Silero's own rule).
	CloseThreshold float32
	// Hang is the quiet the gate waits out before it closes; Off closes on the first quiet window.
	Hang time.Duration
	// Lead is the audio held back while closed and handed over by the push that opens; Off holds none.
	Lead time.Duration
	// Confirm is how long windows must stay at or above OpenThreshold, unbroken, before the gate
	// opens; Off opens on the first such window.
	Confirm time.Duration
}

func (c Config) withDefaults() (Config, error) {
	if c.OpenThreshold == 0 {
		c.OpenThreshold = DefaultOpenThreshold
	}
	if c.CloseThreshold == 0 {
		c.CloseThreshold = DefaultCloseThreshold
	}
	switch {
	case c.Hang == 0:
		c.Hang = DefaultHang
	case c.Hang == Off:
		c.Hang = 0
	}
	switch {
	case c.Lead == 0:
		c.Lead = DefaultLead
	case c.Lead == Off:
		c.Lead = 0
	}
	switch {
	case c.Confirm == 0:
		c.Confirm = DefaultConfirm
	case c.Confirm == Off:
		c.Confirm = 0
	}
	if !(c.OpenThreshold > 0 && c.OpenThreshold < 1) {
		return c, fmt.Errorf("%w: open threshold %v must be in (0, 1)", ErrConfig, c.OpenThreshold)
	}
	if !(c.CloseThreshold > 0 && c.CloseThreshold <= c.OpenThreshold) {
		return c, fmt.Errorf("%w: close threshold %v must be in (0, open threshold %v]", ErrConfig, c.CloseThreshold, c.OpenThreshold)
	}
	if c.Hang < 0 {
		return c, fmt.Errorf("%w: hang %v must be >= 0 (or squelch.Off)", ErrConfig, c.Hang)
	}
	if c.Lead < 0 {
		return c, fmt.Errorf("%w: lead %v must be >= 0 (or squelch.Off)", ErrConfig, c.Lead)
	}
	if c.Confirm < 0 {
		return c, fmt.Errorf("%w: confirm %v must be >= 0 (or squelch.Off)", ErrConfig, c.Confirm)
	}
	if c.Model == nil && c.ModelPath == "" && c.Prober == nil {
		return c, fmt.Errorf("%w: no model path (the mount's models/silero-vad/silero_vad.onnx)", ErrConfig)
	}
	return c, nil
}

// Prober is a stream of per-window speech probabilities: a Stream, or a reader of a pass shared
// with other readers of the same audio. Feed calls emit once per window completed, in order.
type Prober interface {
	Feed(pcm16k []float32, emit func(prob float32)) error
	Window() int
	Reset()
	Close() error
}

var _ Prober = (*Stream)(nil)

// Squelch gates one stream of 16 kHz audio. Push admits a push whole or not at all: whole while
// the gate is open at any point in it, with the held LEAD in front when it is the push that opens.
// A Squelch has one owner; it is not safe for concurrent use.
type Squelch struct {
	cfg            Config
	model          *Model
	ownModel       bool
	stream         Prober
	hangSamples    int
	leadSamples    int
	confirmSamples int

	open    bool
	quiet   int // samples of quiet counted toward the hang; -1 while none is counting
	speechy int // samples of unbroken speech counted toward Confirm while closed
	held    []float32

	pushed   int64
	admitted int64
	closed   bool
}

// New validates cfg, loads the model (unless cfg.Model shares one) and starts closed.
func New(cfg Config) (*Squelch, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Squelch{
		cfg:            cfg,
		model:          cfg.Model,
		hangSamples:    samples(cfg.Hang),
		leadSamples:    samples(cfg.Lead),
		confirmSamples: samples(cfg.Confirm),
		quiet:          -1,
	}
	if cfg.Prober != nil {
		s.stream = cfg.Prober
		s.held = make([]float32, 0, s.leadSamples+SampleRate)
		return s, nil
	}
	if s.model == nil {
		if s.model, err = Load(cfg.Env, cfg.ModelPath); err != nil {
			return nil, err
		}
		s.ownModel = true
	}
	if s.stream, err = s.model.NewStream(); err != nil {
		if s.ownModel {
			s.model.Close()
		}
		return nil, err
	}
	s.held = make([]float32, 0, s.leadSamples+SampleRate)
	return s, nil
}

// Config reports the effective configuration, defaults applied (Off shows as 0).
func (s *Squelch) Config() Config { return s.cfg }

// Push runs the gate over pcm16k (any length) and returns what passes: nil for a push it drops,
// pcm16k whole while open, and the held lead followed by pcm16k for the push that opens. The
// returned slice is the caller's. len(admitted)/SampleRate is exactly the seconds billed.
func (s *Squelch) Push(pcm16k []float32) ([]float32, error) {
	if s.closed {
		return nil, ErrClosed
	}
	wasOpen := s.open
	openedHere := false
	if err := s.stream.Feed(pcm16k, func(prob float32) {
		s.step(prob)
		openedHere = openedHere || s.open
	}); err != nil {
		return nil, fmt.Errorf("squelch push: %w", err)
	}
	s.pushed += int64(len(pcm16k))
	if !wasOpen && !openedHere {
		s.hold(pcm16k)
		return nil, nil
	}
	out := make([]float32, 0, len(s.held)+len(pcm16k))
	out = append(out, s.held...)
	out = append(out, pcm16k...)
	s.held = s.held[:0]
	s.admitted += int64(len(out))
	return out, nil
}

// step advances the gate by one window.
func (s *Squelch) step(prob float32) {
	if !s.open {
		if prob < s.cfg.OpenThreshold {
			s.speechy = 0
			return
		}
		s.speechy += s.stream.Window()
		if s.speechy >= s.confirmSamples {
			s.open, s.quiet, s.speechy = true, -1, 0
		}
		return
	}
	if prob >= s.cfg.OpenThreshold {
		s.quiet = -1
		return
	}
	if prob < s.cfg.CloseThreshold || s.quiet >= 0 {
		s.quiet = max(s.quiet, 0) + s.stream.Window()
		if s.quiet >= s.hangSamples {
			s.open, s.quiet = false, -1
		}
	}
}

// hold keeps the last leadSamples of what the gate dropped. Sliced from the front: with no lead
// nothing is kept, never everything.
func (s *Squelch) hold(pcm []float32) {
	if s.leadSamples == 0 {
		return
	}
	if len(pcm) >= s.leadSamples {
		s.held = append(s.held[:0], pcm[len(pcm)-s.leadSamples:]...)
		return
	}
	if over := len(s.held) + len(pcm) - s.leadSamples; over > 0 {
		n := copy(s.held, s.held[over:])
		s.held = s.held[:n]
	}
	s.held = append(s.held, pcm...)
}

// Open reports whether the gate is open after the last Push.
func (s *Squelch) Open() bool { return s.open }

// Held reports how many samples of lead are held for the push that opens.
func (s *Squelch) Held() int { return len(s.held) }

// Pushed and Admitted report the samples pushed and admitted since New or the last Flush.
func (s *Squelch) Pushed() int64   { return s.pushed }
func (s *Squelch) Admitted() int64 { return s.admitted }

// Flush ends the stream: the gate closes, the held lead and any part window are dropped, the
// model's state returns to silence and the counters to zero. The next Push starts a new stream.
func (s *Squelch) Flush() {
	s.open, s.quiet, s.speechy = false, -1, 0
	s.held = s.held[:0]
	s.pushed, s.admitted = 0, 0
	if s.stream != nil {
		s.stream.Reset()
	}
}

// Close releases the stream, and the model when the Squelch loaded it. Push after Close fails.
func (s *Squelch) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	s.stream.Close()
	if s.ownModel {
		return s.model.Close()
	}
	return nil
}

// Seconds converts a sample count at 16 kHz to the seconds billed for it.
func Seconds(samples int) float64 { return float64(samples) / SampleRate }

func samples(d time.Duration) int {
	return int((d*SampleRate + time.Second/2) / time.Second)
}
