package session

import (
	"time"

	"github.com/voiced/voiced/turn"
	"github.com/voiced/voiced/wire"
)

// TurnDetectors makes Engines.NewTurnDetector from a speech-probability model: a session's
// turn_detection becomes turn's Hush (server_vad: threshold, prefix padding, silence duration)
// or Semantic (semantic_vad: eagerness, reading the partial transcript).
func TurnDetectors(speech turn.Speech) func(wire.TurnDetection, Partial) (turn.Detector, error) {
	return func(td wire.TurnDetection, partial Partial) (turn.Detector, error) {
		return TurnDetectorOn(td, partial, speech)
	}
}

// TurnDetectorOn is Engines.NewTurnDetectorOn: the detector for td reading speech (the VAD pass
// the conversation's squelch lends).
func TurnDetectorOn(td wire.TurnDetection, partial Partial, speech turn.Speech) (turn.Detector, error) {
	switch td.Type {
	case wire.TurnSemanticVAD:
		cfg := turn.DefaultSemanticConfig(speech, turn.TranscriptFunc(partial))
		var err error
		if cfg.Eagerness, err = turn.ParseEagerness(td.Eagerness); err != nil {
			return nil, err
		}
		d, err := turn.NewSemantic(cfg)
		if err != nil {
			return nil, err // not a typed nil in the interface
		}
		return d, nil
	default:
		cfg := turn.DefaultHushConfig(speech)
		cfg.Threshold = td.Threshold
		cfg.PrefixPadding = time.Duration(td.PrefixPaddingMs) * time.Millisecond
		cfg.SilenceDuration = time.Duration(td.SilenceDurationMs) * time.Millisecond
		d, err := turn.NewHush(cfg)
		if err != nil {
			return nil, err
		}
		return d, nil
	}
}
