package turn

import (
	"fmt"
	"time"
)

// HushConfig is server_vad. DefaultHushConfig gives OpenAI's documented defaults; fields are
// taken as given (a zero PrefixPadding is no padding).
type HushConfig struct {
	// Speech is the shared speech-probability model (Silero); each detector opens its own Prober.
	Speech Speech
	// Threshold is the speech probability that counts as speech, 0..1 (threshold).
	Threshold float64
	// PrefixPadding is the audio before the detected start that the turn includes (prefix_padding_ms).
	PrefixPadding time.Duration
	// SilenceDuration is the quiet that ends the turn (silence_duration_ms).
	SilenceDuration time.Duration
	// MinSpeech is how long speech must hold before it takes the floor (see DefaultMinSpeech).
	MinSpeech time.Duration
}

// DefaultHushConfig is server_vad's defaults: threshold 0.5, prefix_padding_ms 300,
// silence_duration_ms 500.
func DefaultHushConfig(model Speech) HushConfig {
	return HushConfig{
		Speech:          model,
		Threshold:       0.5,
		PrefixPadding:   300 * time.Millisecond,
		SilenceDuration: 500 * time.Millisecond,
		MinSpeech:       DefaultMinSpeech,
	}
}

// Hush ends a turn on silence alone: SilenceDuration of quiet after speech yields the floor.
type Hush struct {
	*machine
	cfg HushConfig
}

// NewHush validates cfg and starts Quiet.
func NewHush(cfg HushConfig) (*Hush, error) {
	if !(cfg.Threshold >= 0 && cfg.Threshold <= 1) {
		return nil, fmt.Errorf("%w: threshold %v must be in [0, 1]", ErrConfig, cfg.Threshold)
	}
	if cfg.SilenceDuration < 0 {
		return nil, fmt.Errorf("%w: silence duration %v must be >= 0", ErrConfig, cfg.SilenceDuration)
	}
	silence := samples(cfg.SilenceDuration)
	f, err := newMachine(cfg.Speech, cfg.Threshold, cfg.MinSpeech, cfg.PrefixPadding, func(int) int { return silence })
	if err != nil {
		return nil, err
	}
	return &Hush{machine: f, cfg: cfg}, nil
}

// Config reports the configuration the detector runs with.
func (h *Hush) Config() HushConfig { return h.cfg }
