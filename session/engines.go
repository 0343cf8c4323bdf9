package session

import (
	"context"
	"time"

	"github.com/voiced/voiced/mind"
	"github.com/voiced/voiced/turn"
	"github.com/voiced/voiced/wire"
)

// The engines a conversation uses, as small interfaces declared here (STYLE 7); cmd/voiced adapts
// speechcore's Whisper, Kokoro and Silero and turn's detectors to them.

// Ears transcribes one finished utterance (16 kHz mono float32, ≤ 30 s: the conversation hears
// a longer one window by window).
type Ears interface {
	Transcribe(ctx context.Context, pcm16k []float32) (string, error)
}

// MelEars is Ears that also decodes precomputed log-mel features (Whisper: NumMels bands ×
// audio.WhisperFrames, as audio.LogMel or an audio.MelStream gives them). The conversation's
// partial decodes then keep the open turn's mel and compute only the frames new since the last
// partial, instead of the whole window's each time. mel is read until TranscribeMel returns.
type MelEars interface {
	Ears
	NumMels() int
	TranscribeMel(ctx context.Context, mel []float32, h Hearing) (string, error)
}

// SharedEars is Ears on a decoder every conversation shares (cmd/voiced's, on Whisper's queue),
// told whose each transcription is and whether it is a partial: finals are served first and
// fairly between conversations, then partials, the newest per conversation only. A partial
// replaced by a newer one, or not decoded for any reason, returns an error (the conversation
// drops it).
type SharedEars interface {
	Ears
	TranscribeAs(ctx context.Context, pcm16k []float32, h Hearing) (string, error)
}

// Hearing is whose a transcription is (the conversation's id) and its kind.
type Hearing struct {
	Conversation string
	Partial      bool
	// Language is the session's transcription language: "" for the server's default, "auto" to
	// detect (finals only), or an ISO-639-1 code.
	Language string
	// Detected, when set, is called by Ears that detect with the language a final was detected
	// in (not called when the language was told).
	Detected func(language string)
}

// Voice speaks text: emit is called with each piece's audio (24 kHz mono PCM16) as soon as it
// exists. voice is the session's voice name (an OpenAI name such as "alloy" or a mounted Kokoro
// voice); the adapter maps names it does not have to its default. An error from emit stops it.
// Text with nothing speakable in it (punctuation alone) is not an error: nil, without audio.
// The conversation cuts a reply into pieces with sentence before it asks.
type Voice interface {
	Speak(ctx context.Context, text, voice string, speed float64, emit func(pcm24k []int16) error) error
}

// Partial gives the latest partial transcript of the turn in progress, at once (semantic_vad
// reads it on every quiet window).
type Partial func() string

// Squelch passes speech and drops silence; what passes is what a speaker is billed for as heard.
// When it is also an io.Closer it is closed with the conversation.
type Squelch interface {
	Push(pcm16k []float32) ([]float32, error)
}

// SharedSquelch is a Squelch that lends its speech-probability pass: each NewProber reads the
// probabilities the squelch's own pass computes (turn.Shared), fed the same audio in the same
// order. The conversation's turn detectors read it through NewTurnDetectorOn.
type SharedSquelch interface {
	Squelch
	turn.Speech
}

// Meter receives seconds heard and spoken, per principal and org (the meter package stores them).
// Record is called at every turn end and at least every second during a turn, with the seconds
// since the last call (deltas, never totals).
type Meter interface {
	Record(ctx context.Context, u Usage) error
}

// MeterHolder is a Meter that waits for its writers when it closes: a conversation holds it from
// its start until after its last Record, so one still running when the server stops (a worker
// stuck past the socket drain) still has its last seconds written.
type MeterHolder interface {
	Meter
	Hold() (release func())
}

// Usage is one metering record.
type Usage struct {
	Subject, Org string
	Heard        time.Duration // user audio past the squelch
	Spoken       time.Duration // reply audio sent
	// TurnEnded marks the record made at a turn's end (a commit, a response.done): a durable
	// meter writes it now rather than at its next tick.
	TurnEnded bool
}

// Engines are what conversations run with. Mind defaults to mind.Echo; a nil Ears, Voice,
// NewTurnDetector, NewSquelch or Meter turns that part off: no transcript (the items carry none), text
// replies only, client commits only, all audio billed as heard, no metering.
type Engines struct {
	Ears  Ears
	Voice Voice
	Mind  mind.Mind
	Meter Meter
	// NewTurnDetector makes the turn detector for a session's turn_detection (never TurnNone);
	// partial is what semantic_vad reads. The conversation feeds it on the input goroutine, each
	// run of input audio before anything else hears it, at positions counted from its first feed;
	// its Feed must not wait on a network.
	NewTurnDetector func(td wire.TurnDetection, partial Partial) (turn.Detector, error)
	NewSquelch      func() (Squelch, error)
	// NewTurnDetectorOn, when set and the conversation's squelch lends its VAD pass (it is also a
	// turn.Speech: see SharedSquelch), is used instead of NewTurnDetector with that pass as speech,
	// so the model runs once per window for the squelch and the detector both.
	NewTurnDetectorOn func(td wire.TurnDetection, partial Partial, speech turn.Speech) (turn.Detector, error)
	// Ready, when set, is asked before each upgrade: a non-nil error (a *door.Refusal such
	// as speech_not_warm) refuses the socket.
	Ready func() error
	// Admit, when set, is asked after the credential is verified and before the upgrade (a quota
	// check): a non-nil error (a *door.Refusal) refuses the socket.
	Admit func(ctx context.Context, p Principal) error
	// Budget, when set, says how much the principal may still use today (heard + spoken);
	// limited false means no quota. It is asked when the conversation opens and after each
	// meter record; in between the conversation counts down itself, delta by delta, and closes
	// with insufficient_quota when nothing is left.
	Budget func(ctx context.Context, p Principal) (left time.Duration, limited bool, err error)
}

func (e Engines) ready() error {
	if e.Ready == nil {
		return nil
	}
	return e.Ready()
}
