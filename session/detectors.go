package session

import (
	"time"

	"github.com/voiced/voiced/turn"
	"github.com/voiced/voiced/wire"
)

// TurnDetectors makes Engines.NewTurnDetector from a speech-probability model: a session's
// turn_detection becomes turn's Hush (server_vad: threshold, prefix padding, silence duration)
// or Semantic (semantic_vad: eagerness, reading the partial transcript).
func TurnDetectors(speech turn.Speech) func(wire.TurnDetection, Partial) (TurnDetector, error) {
	return func(td wire.TurnDetection, partial Partial) (TurnDetector, error) {
		return TurnDetectorOn(td, partial, speech)
	}
}

// TurnDetectorOn is Engines.NewTurnDetectorOn: the detector for td reading speech (the VAD pass
// the conversation's squelch lends).
func TurnDetectorOn(td wire.TurnDetection, partial Partial, speech turn.Speech) (TurnDetector, error) {
	var d turn.Detector
	var err error
	switch td.Type {
	case wire.TurnSemanticVAD:
		cfg := turn.DefaultSemanticConfig(speech, turn.TranscriptFunc(partial))
		if cfg.Eagerness, err = turn.ParseEagerness(td.Eagerness); err != nil {
			return nil, err
		}
		d, err = turn.NewSemantic(cfg)
	default:
		cfg := turn.DefaultHushConfig(speech)
		cfg.Threshold = td.Threshold
		cfg.PrefixPadding = time.Duration(td.PrefixPaddingMs) * time.Millisecond
		cfg.SilenceDuration = time.Duration(td.SilenceDurationMs) * time.Millisecond
		d, err = turn.NewHush(cfg)
	}
	if err != nil {
		return nil, err
	}
	return &detector{d: d}, nil
}

// detector is a turn.Detector as a TurnDetector: it counts the samples fed, so its events are
// positions from its first Push (the conversation places them on the session's timeline).
type detector struct {
	d   turn.Detector
	pos int64
}

func (f *detector) Push(pcm []float32) ([]TurnEvent, error) {
	evs, err := f.d.Feed(pcm, f.pos)
	f.pos += int64(len(pcm))
	var out []TurnEvent
	for _, ev := range evs {
		switch ev := ev.(type) {
		case turn.SpeechStarted:
			out = append(out, TurnEvent{Sample: ev.Start})
		case turn.SpeechStopped:
			out = append(out, TurnEvent{Stopped: true, Sample: ev.End, SpeechEnd: ev.SpeechEnd})
		case turn.EndLikely:
			out = append(out, TurnEvent{Hint: HintEndLikely, Sample: ev.At, Transcript: ev.Transcript})
		case turn.EndUnlikely:
			out = append(out, TurnEvent{Hint: HintEndUnlikely, Sample: ev.At})
		case turn.Paused:
			out = append(out, TurnEvent{Hint: HintPaused, Sample: ev.At})
		}
	}
	return out, err
}

func (f *detector) Reset()       { f.d.Reset() }
func (f *detector) Close() error { return f.d.Close() }
