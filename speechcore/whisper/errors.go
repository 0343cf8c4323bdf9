package whisper

import "errors"

// Sentinel errors, matched with errors.Is. Load wraps them with the file and the cure.
var (
	// ErrConfig: config.json, generation_config.json or tokenizer.json is missing, unreadable or
	// inconsistent with the ONNX graphs.
	ErrConfig = errors.New("whisper model files are inconsistent")
	// ErrUnsupportedIO: a graph declares an input or output this engine cannot feed or read
	// (float16 I/O, an unknown input name, a missing logits output).
	ErrUnsupportedIO = errors.New("whisper graph I/O unsupported")
	// ErrAudioTooLong: Transcribe takes at most one 30 s window; callers cut longer audio.
	ErrAudioTooLong = errors.New("audio longer than one 30 s whisper window")
	// ErrMelShape: TranscribeMel was given features that are not [NumMels()*3000].
	ErrMelShape = errors.New("log-mel features are not one [n_mels, 3000] whisper window")
	// ErrSuperseded: a newer partial of the same owner took this one's place in the queue, or a
	// final of the same owner was queued (TranscribeAs with Kind Partial); it was not decoded.
	ErrSuperseded = errors.New("whisper partial superseded by a newer one")
	// ErrPreempted: a final was queued while this partial was being decoded; its decode ended
	// between decoder steps so the final goes next (TranscribeAs with Kind Partial).
	ErrPreempted = errors.New("whisper partial preempted by a final")
	// ErrUnknownLanguage: a request's language is not one of Whisper's (ParseLanguage).
	ErrUnknownLanguage = errors.New("unknown language")
	// ErrLanguageNotServed: the model has no token for the language asked (an English-only
	// checkpoint asked for another language; a fixture without it).
	ErrLanguageNotServed = errors.New("language not served by the mounted whisper model")
	// ErrTranslateNotServed: a translate request on a checkpoint with no <|translate|> task (an
	// English-only one).
	ErrTranslateNotServed = errors.New("translation not served by the mounted whisper model")
	// ErrClosed: the engine was closed.
	ErrClosed = errors.New("whisper engine closed")
)
