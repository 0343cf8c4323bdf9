package session

import (
	"context"
	"time"

	"github.com/voiced/voiced/mind"
	"github.com/voiced/voiced/wire"
)

// The engines a conversation uses, as small interfaces declared here (STYLE 7); cmd/voiced adapts
// speechcore's Whisper, Kokoro and Silero and turn's detectors to them.

// Ears transcribes one finished utterance (16 kHz mono float32, ≤ 30 s).
type Ears interface {
	Transcribe(ctx context.Context, pcm16k []float32) (string, error)
}

// Voice speaks text: emit is called with each piece's audio (24 kHz mono PCM16) as soon as it
// exists. voice is the session's voice name (an OpenAI name such as "alloy" or a mounted Kokoro
// voice); the adapter maps names it does not have to its default. An error from emit stops it.
type Voice interface {
	Speak(ctx context.Context, text, voice string, speed float64, emit func(pcm24k []int16) error) error
}

// Floor decides who holds the floor from the user's audio. Push is called on the read loop with
// each append's audio (16 kHz) before that audio is handed on; it must not wait on a network.
type Floor interface {
	Push(pcm16k []float32) (FloorEvent, error)
}

// FloorEvent is what one Push found. Sample positions count 16 kHz samples from the floor's first
// Push; StartSample already includes the configured prefix padding.
type FloorEvent struct {
	Started     bool // the user took the floor (speech started)
	StartSample int64
	Stopped     bool // the user yielded it (end of turn)
	EndSample   int64
}

// Squelch passes speech and drops silence; what passes is what a speaker is billed for as heard.
type Squelch interface {
	Push(pcm16k []float32) ([]float32, error)
}

// Meter receives seconds heard and spoken, per principal and org (the meter package stores them).
// Record is called at every turn end and at least every second during a turn, with the seconds
// since the last call (deltas, never totals).
type Meter interface {
	Record(ctx context.Context, u Usage) error
}

// Usage is one metering record.
type Usage struct {
	Subject, Org string
	Heard        time.Duration // user audio past the squelch
	Spoken       time.Duration // reply audio sent
}

// Engines are what conversations run with. Mind defaults to mind.Echo; a nil Ears, Voice,
// NewFloor, NewSquelch or Meter turns that part off: no transcript (the items carry none), text
// replies only, client commits only, all audio billed as heard, no metering.
type Engines struct {
	Ears       Ears
	Voice      Voice
	Mind       mind.Mind
	Meter      Meter
	NewFloor   func(wire.TurnDetection) (Floor, error)
	NewSquelch func() (Squelch, error)
	// Ready, when set, is asked before each upgrade: a non-nil error (a *speechcore.Refusal such
	// as speech_not_warm) refuses the socket.
	Ready func() error
}

func (e Engines) ready() error {
	if e.Ready == nil {
		return nil
	}
	return e.Ready()
}
