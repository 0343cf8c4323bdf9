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
// detected is the language the last final was detected in (Ears that detect report it through
// Hearing.Detected) while the session leaves the language open ("" or "auto"): partials decode
// in it (they never detect), the mind is told it, the completed event reports it.
type hearingLanguage struct {
	v        atomic.Pointer[string]
	detected atomic.Pointer[string]
}

func (h *hearingLanguage) set(s wire.Session) {
	lang := ""
	if s.Transcription != nil {
		lang = s.Transcription.Language
	}
	if old := h.v.Swap(&lang); old != nil && *old != lang {
		h.detected.Store(nil) // another language asked: the last detection no longer holds
	}
}

// open says whether the session leaves the language to the server: none named, or auto.
func (h *hearingLanguage) open() bool {
	l := h.get()
	return l == "" || strings.EqualFold(l, "auto")
}

// heard records a final's detected language (Hearing.Detected).
func (h *hearingLanguage) heard(code string) {
	if code != "" && h.open() {
		h.detected.Store(&code)
	}
}

// lastDetected is the last final's detected language, "" when none (or the session names one).
func (h *hearingLanguage) lastDetected() string {
	if p := h.detected.Load(); p != nil && h.open() {
		return *p
	}
	return ""
}

// partial is the language a partial decode is told: the last final's detection when the
// session leaves the language open (a partial never detects: one extra decoder pass per partial
// is what detection on finals only saves), else the session's.
func (h *hearingLanguage) partial() string {
	if d := h.lastDetected(); d != "" {
		return d
	}
	return h.get()
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
// already name it: the mind then answers in the language the user speaks. detected is the
// language the user's last turn was detected in when the session leaves it open ("" or auto):
// it is noted too, English included (a conversation that moved from Spanish back to English is
// answered in English).
func mindInstructions(cfg wire.Session, detected string) string {
	if cfg.Transcription == nil {
		return cfg.Instructions
	}
	code := strings.ToLower(cfg.Transcription.Language)
	name, ok := "", false
	if (code == "" || code == "auto") && detected != "" {
		code = strings.ToLower(detected)
		name, ok = languageNames[code]
		if code == "en" {
			name, ok = "English", true
		}
	}
	if i := strings.IndexAny(code, "-_"); i > 0 {
		code = code[:i]
	}
	if name == "" {
		name, ok = languageNames[code]
	}
	if !ok || strings.Contains(strings.ToLower(cfg.Instructions), strings.ToLower(name)) {
		return cfg.Instructions
	}
	note := "The user speaks " + name + "; answer in " + name + "."
	if cfg.Instructions == "" {
		return note
	}
	return cfg.Instructions + "\n\n" + note
}
