package speechcore

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"
)

// Refusal is an error a door shows a client by name: {"type":"error","name":…,"message":…} in a
// socket, or the same object with an HTTP status before the upgrade. Message must be safe to show.
type Refusal struct {
	Status     int           // HTTP status when refused before an upgrade
	Name       string        // stable machine name clients match on
	Message    string        // human text, safe to show a client
	RetryAfter time.Duration // sets Retry-After when > 0
}

func (r *Refusal) Error() string { return r.Name + ": " + r.Message }

// Named refusals shared by every door.
var (
	ErrNotMounted = &Refusal{Status: http.StatusServiceUnavailable, Name: "speech_assets_not_mounted",
		Message: "no speech assets are mounted: start voiced with --speech-assets DIR or VOICED_SPEECH_ASSETS=DIR; " +
			"DIR holds MODELS.sha256 and models/whisper-small/, models/kokoro-82m/, models/silero-vad/ (see README, 'The speech-asset mount')"}
	ErrNotWarm = &Refusal{Status: http.StatusServiceUnavailable, Name: "speech_not_warm",
		Message: "the speech models are still loading and warming up; retry shortly", RetryAfter: 2 * time.Second}
	ErrSessionCap = &Refusal{Status: http.StatusTooManyRequests, Name: "too_many_sessions",
		Message: "the speech session cap is reached; retry later", RetryAfter: time.Second}
	ErrQueueFull = &Refusal{Status: http.StatusServiceUnavailable, Name: "queue_full",
		Message: "the model's queue is full; retry later", RetryAfter: time.Second}
)

// Refuse returns a copy of base with another message.
func Refuse(base *Refusal, message string) *Refusal {
	r := *base
	r.Message = message
	return &r
}

// NewRefusal makes a refusal with a status, a name and a message.
func NewRefusal(status int, name, message string) *Refusal {
	return &Refusal{Status: status, Name: name, Message: message}
}

// ErrorFrame is the JSON every door sends for an error, in a socket or an HTTP body.
type ErrorFrame struct {
	Type    string `json:"type"` // always "error"
	Name    string `json:"name"`
	Message string `json:"message"`
}

// Frame returns the socket frame for err: a Refusal by its name, anything else as internal_error
// with a generic message (the detail goes to the log, not the client).
func Frame(err error) ErrorFrame {
	var r *Refusal
	if errors.As(err, &r) {
		return ErrorFrame{Type: "error", Name: r.Name, Message: r.Message}
	}
	return ErrorFrame{Type: "error", Name: "internal_error", Message: "the server failed this request; see its log"}
}

// WriteError writes err as an HTTP response: a Refusal with its status (and Retry-After), anything
// else as 500 internal_error.
func WriteError(w http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	var r *Refusal
	if errors.As(err, &r) {
		status = r.Status
		if r.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int((r.RetryAfter+time.Second-1)/time.Second)))
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(Frame(err))
}
