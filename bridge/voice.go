package bridge

import (
	"context"
	"errors"
	"time"

	"github.com/voiced/voiced/session"
	"github.com/voiced/voiced/speechcore"
	"github.com/voiced/voiced/speechcore/kokoro"
)

// speaker is what Voice needs of Kokoro (*kokoro.Engine).
type speaker interface {
	Voices() []string
	Speak(ctx context.Context, req kokoro.Request, emit func(kokoro.Chunk) error) error
}

// Voice is Kokoro as the conversation's voice: a session's voice name is matched to a mounted
// voice (kokoro.MatchVoice; one it lacks speaks in the default), a speed outside Kokoro's range
// speaks at the default, and text with nothing to say is no error (session.Voice's contract).
type Voice struct {
	kokoro  func() speaker           // the loaded engine, nil until it is
	observe func(pass time.Duration) // each piece's synthesis time, for the speech metrics
}

var _ session.Voice = Voice{}

// NewVoice is the service's Kokoro as a Voice, looked up per call.
func NewVoice(svc *speechcore.Service) Voice {
	return Voice{
		kokoro: func() speaker {
			if k := svc.Kokoro; k != nil {
				return k
			}
			return nil
		},
		observe: svc.ObserveSynthesis,
	}
}

// Speak says text in the voice called name, handing each piece's 24 kHz PCM to emit.
func (v Voice) Speak(ctx context.Context, text, name string, speed float64, emit func([]int16) error) error {
	k := v.kokoro()
	if k == nil {
		return speechcore.ErrNotWarm
	}
	s, err := kokoro.CheckSpeed(float32(speed))
	if err != nil {
		s = 0
	}
	start := time.Now()
	err = k.Speak(ctx, kokoro.Request{Text: text, Voice: kokoro.MatchVoice(k.Voices(), name), Speed: s}, func(c kokoro.Chunk) error {
		v.observe(time.Since(start))
		err := emit(c.PCM)
		start = time.Now()
		return err
	})
	if errors.Is(err, kokoro.ErrNothingToSay) && ctx.Err() == nil {
		return nil // punctuation alone: nothing to speak (session.Voice's contract)
	}
	return err
}
