package speechdoor

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/speechcore/whisper"
)

// Refusals of the speech-to-text doors, by name.
var (
	ErrOddLengthPCM = door.NewRefusal(http.StatusBadRequest, "odd_length_pcm",
		"PCM16 audio must be an even number of bytes (16-bit little-endian samples); the frame was refused, earlier audio is kept")
	ErrFrameTooLarge = door.NewRefusal(http.StatusRequestEntityTooLarge, "frame_too_large",
		"a frame may carry at most 4 MiB; the frame was refused, earlier audio is kept")
	ErrTranscriptionFailed = door.NewRefusal(http.StatusInternalServerError, "transcription_failed",
		"the transcription model failed on this audio; see the server log")
)

// hearingRoutes claims the speech-to-text doors; routes calls it.
func (s *Doors) hearingRoutes() {
	s.Handle("GET /v1/transcribe", NewTranscribeDoor(s))
	s.Handle("POST /v1/audio/transcriptions", NewTranscriptionsDoor(s))
	s.Handle("POST /v1/audio/translations", NewTranslationsDoor(s))
	s.transcripts = NewTranscriptDoor(s)
	s.Handle("POST /v1/audio/transcript", http.HandlerFunc(s.transcripts.Open))
	s.Handle("POST /v1/audio/transcript/{id}", http.HandlerFunc(s.transcripts.Push))
	s.Handle("DELETE /v1/audio/transcript/{id}", http.HandlerFunc(s.transcripts.Close))
}

// logDecodeFailure logs a failed decode: a refusal by name (the queue, a shutdown) is what a busy
// node does for its clients, a warning; anything else is the server's fault.
func logDecodeFailure(log *slog.Logger, msg string, err error, attrs ...any) {
	var r *door.Refusal
	if errors.As(err, &r) || errors.Is(err, whisper.ErrClosed) {
		log.Warn(msg, append(attrs, "err", err)...)
		return
	}
	log.Error(msg, append(attrs, "err", err)...)
}

// transcriptionError maps an engine error to what a client is shown.
func transcriptionError(err error) *door.Refusal {
	var r *door.Refusal
	switch {
	case errors.As(err, &r):
		return r
	case errors.Is(err, whisper.ErrClosed):
		return door.ErrShuttingDown
	}
	return ErrTranscriptionFailed
}
