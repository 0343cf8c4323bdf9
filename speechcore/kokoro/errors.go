package kokoro

import "errors"

// Sentinel errors, matched with errors.Is. The doors map them to named refusals.
var (
	// ErrUnknownVoice: the voice is not mounted; the wrapped message lists the mounted ones.
	ErrUnknownVoice = errors.New("voice not mounted")
	// ErrSpeed: speed outside MinSpeed..MaxSpeed.
	ErrSpeed = errors.New("speed out of range")
	// ErrNothingToSay: the text holds nothing speakable (empty, only punctuation, emoji or
	// symbols). Decided here rather than speaking silence, so a caller learns its text was empty.
	ErrNothingToSay = errors.New("nothing to say")
	// ErrVoiceLanguage: the voice's language (its name's prefix) has no G2P here (Japanese,
	// Mandarin); the wrapped message names it and the served languages.
	ErrVoiceLanguage = errors.New("voice language not served")
	// ErrModelIO: the ONNX file's inputs or outputs are not a Kokoro export's.
	ErrModelIO = errors.New("kokoro model inputs/outputs not recognised")
	// ErrVoiceTable: a voices/<name>.bin is not a float32 [510 x 256] table.
	ErrVoiceTable = errors.New("voice table malformed")
	// ErrEspeak: espeak-ng could not be initialised.
	ErrEspeak = errors.New("espeak-ng unavailable")
	// ErrClosed: the engine was closed.
	ErrClosed = errors.New("kokoro engine closed")
)
