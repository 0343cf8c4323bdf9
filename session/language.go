package session

import (
	"errors"
	"strings"
	"sync/atomic"

	"github.com/voiced/voiced/wire"
)

// ErrLanguageNotServed is what Ears return (wrapped) for a transcription language the mounted
// model cannot hear; the conversation reports it by name in the transcription's failed event.
var ErrLanguageNotServed = errors.New("language not served")

// codeLanguageNotServed names that failure in conversation.item.input_audio_transcription.failed.
const codeLanguageNotServed = "language_not_served"

// hearingLanguage is the session's transcription language (audio.input.transcription.language,
// beta input_audio_transcription.language) as the input goroutine last applied it, read by the
// transcription and partial workers: "" is the server's default, "auto" detects on finals.
type hearingLanguage struct{ v atomic.Pointer[string] }

func (h *hearingLanguage) set(s wire.Session) {
	lang := ""
	if s.Transcription != nil {
		lang = s.Transcription.Language
	}
	h.v.Store(&lang)
}

func (h *hearingLanguage) get() string {
	if p := h.v.Load(); p != nil {
		return *p
	}
	return ""
}

// transcriptionFailure is the failed event's error for err.
func transcriptionFailure(err error) *wire.Error {
	if errors.Is(err, ErrLanguageNotServed) {
		return &wire.Error{Type: wire.TypeInvalidRequest, Code: codeLanguageNotServed, Message: err.Error()}
	}
	return &wire.Error{Type: wire.TypeServer, Code: codeTranscriptionFailed, Message: "the transcription of this audio failed"}
}

// languageNames names the languages voiced speaks besides English, for the mind's note.
var languageNames = map[string]string{
	"es": "Spanish", "fr": "French", "it": "Italian", "pt": "Portuguese", "hi": "Hindi",
	"de": "German", "ja": "Japanese", "zh": "Chinese", "nl": "Dutch", "pl": "Polish",
}

// mindInstructions are the session's instructions, with a note of the language the user is
// heard in when the session names one (not English, not auto) and the instructions do not
// already name it: the mind then answers in the language the user speaks.
func mindInstructions(cfg wire.Session) string {
	if cfg.Transcription == nil {
		return cfg.Instructions
	}
	code := strings.ToLower(cfg.Transcription.Language)
	if i := strings.IndexAny(code, "-_"); i > 0 {
		code = code[:i]
	}
	name, ok := languageNames[code]
	if !ok || strings.Contains(strings.ToLower(cfg.Instructions), strings.ToLower(name)) {
		return cfg.Instructions
	}
	note := "The user speaks " + name + "; answer in " + name + "."
	if cfg.Instructions == "" {
		return note
	}
	return cfg.Instructions + "\n\n" + note
}
