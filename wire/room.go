package wire

import (
	"encoding/json"
)

// voiced's own session fields for conversations in real rooms (issue 22), under the session
// object's "voiced" member in both dialects:
//
//	"voiced": {"echo_cancellation": true,
//	           "interruption": {"min_duration_ms": 400, "min_words": 1}}
//
// echo_cancellation: the server cancels the reply audio it sent from the microphone (null: the
// transport's default: on for WebSocket and G.711 sessions, off for WebRTC, whose browser
// cancels its own echo). interruption: speech during a reply pauses it and cancels it only once
// it is an interruption (null: every speech_started cancels, as OpenAI does).

// Interruption says when speech during a reply interrupts it.
type Interruption struct {
	// MinDurationMs is the least speech (ms, from its start) that interrupts.
	MinDurationMs int `json:"min_duration_ms"`
	// MinWords is the least words the partial transcript must hold (backchannels alone never
	// count); 0: duration alone decides.
	MinWords int `json:"min_words"`
}

// Bounds and defaults of the interruption fields.
const (
	MaxInterruptionMs       = 5000
	MaxInterruptionWords    = 20
	DefaultInterruptionMs   = 400
	DefaultInterruptionWord = 0
)

type voicedJSON struct {
	EchoCancellation *bool         `json:"echo_cancellation,omitempty"`
	Interruption     *Interruption `json:"interruption,omitempty"`
}

// voicedWire renders voiced's own fields; nil (the member left out) when none is set.
func (s *Session) voicedWire() *voicedJSON {
	if s.EchoCancellation == nil && s.Interruption == nil {
		return nil
	}
	return &voicedJSON{EchoCancellation: s.EchoCancellation, Interruption: s.Interruption}
}

func parseBoolField(raw json.RawMessage, param, id string) (bool, *Error) {
	var b bool
	if json.Unmarshal(raw, &b) != nil {
		return false, invalidType(param, "a boolean", raw, id)
	}
	return b, nil
}

func parseInterruption(raw json.RawMessage, param, id string) (Interruption, *Error) {
	in := struct {
		MinDurationMs *int `json:"min_duration_ms"`
		MinWords      *int `json:"min_words"`
	}{}
	if err := unmarshalObject(raw, param, id, &in); err != nil {
		return Interruption{}, err
	}
	var keys map[string]json.RawMessage
	_ = json.Unmarshal(raw, &keys)
	for k := range keys {
		if k != "min_duration_ms" && k != "min_words" {
			return Interruption{}, ErrUnknownParameter(param+"."+k, id)
		}
	}
	out := Interruption{MinDurationMs: DefaultInterruptionMs, MinWords: DefaultInterruptionWord}
	if in.MinDurationMs != nil {
		if *in.MinDurationMs < 0 || *in.MinDurationMs > MaxInterruptionMs {
			return out, ErrInvalidValue(param+".min_duration_ms", id, "Invalid 'min_duration_ms': %d; it must be between 0 and %d.", *in.MinDurationMs, MaxInterruptionMs)
		}
		out.MinDurationMs = *in.MinDurationMs
	}
	if in.MinWords != nil {
		if *in.MinWords < 0 || *in.MinWords > MaxInterruptionWords {
			return out, ErrInvalidValue(param+".min_words", id, "Invalid 'min_words': %d; it must be between 0 and %d.", *in.MinWords, MaxInterruptionWords)
		}
		out.MinWords = *in.MinWords
	}
	return out, nil
}
