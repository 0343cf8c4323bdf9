package wire

import (
	"encoding/json"
	"fmt"
)

// DefaultTranscriptionModel is what a transcription session transcribes with when it names no
// model: it hears every turn whatever its config says (a caption session without a
// transcription is no session), and says so in its session object.
const DefaultTranscriptionModel = "whisper-1"

// CodeTranscriptionSession refuses what a transcription session never does (response.*):
// it hears and transcribes, and never answers.
const CodeTranscriptionSession = "transcription_session"

// Transcribes reports whether s is a transcription session (it never answers).
func (s *Session) Transcribes() bool { return s.Type == SessionTranscription }

// Become makes s a session of type t, as a session that nothing has happened on yet may become
// (its first session.update, a key minted for the other type): a transcription session hears,
// detects turns and transcribes them, and never answers, so its turn detector creates and
// interrupts no response, and it transcribes with DefaultTranscriptionModel unless told otherwise.
func (s *Session) Become(t SessionType) {
	s.Type = t
	s.fitType()
}

// fitType keeps what a session's type rules out off: a transcription session's turns start and
// cut no response (a turn_detection in an update fills OpenAI's defaults, which say they do).
func (s *Session) fitType() {
	if s.Type != SessionTranscription {
		return
	}
	s.TurnDetection.CreateResponse, s.TurnDetection.InterruptResponse = false, false
	if s.Transcription == nil {
		s.Transcription = &Transcription{Model: DefaultTranscriptionModel}
	}
}

// ApplyOpen is Apply on a session nothing has happened on yet: an update that sets another type
// makes s that type first (Become), instead of being refused.
func (s *Session) ApplyOpen(u *SessionUpdate) error {
	if t := u.Session.Type; t.Set() && t.Value != s.Type {
		next := *s
		next.Become(t.Value)
		if err := next.Apply(u); err != nil {
			return err
		}
		*s = next
		return nil
	}
	return s.Apply(u)
}

// DecodeTranscriptionSession decodes a bare beta transcription session object (the body of POST
// /v1/realtime/transcription_sessions, the session of a transcription_session.update) as that
// update.
func DecodeTranscriptionSession(raw json.RawMessage) (*SessionUpdate, error) {
	u, err := decodeSessionUpdate(ClientHeader{Type: TypeTranscriptionSessionUpdate}, raw, Beta)
	if err != nil {
		return nil, err
	}
	return u, nil
}

// ErrTranscriptionSession refuses a client event a transcription session never acts on
// (response.create, response.cancel, output_audio_buffer.clear): it hears and never answers.
func ErrTranscriptionSession(eventType, eventID string) *Error {
	return invalidRequest(CodeTranscriptionSession, "type", eventID,
		"%s", fmt.Sprintf("The event type '%s' is not available in a transcription session: it hears and transcribes, and never answers.", clip(eventType)))
}
