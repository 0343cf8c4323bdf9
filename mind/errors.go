package mind

import (
	"errors"
	"fmt"
)

// Sentinels, matched with errors.Is on an *Error.
var (
	// ErrTimeout: the mind did not answer within its timeout.
	ErrTimeout = errors.New("mind timed out")
	// ErrUnavailable: the mind's server could not be reached or answered with a failure status.
	ErrUnavailable = errors.New("mind unavailable")
	// ErrBadAnswer: the mind's server answered with something that is not a chat-completions stream.
	ErrBadAnswer = errors.New("mind answered badly")
	// ErrImagesRefused: the request carried images and the mind's server refused it (a model
	// that does not see images).
	ErrImagesRefused = errors.New("mind refused images")
	// ErrAudioRefused: the request carried audio (an omni mind's input_audio parts) and the
	// mind's server refused it (a model that does not hear audio).
	ErrAudioRefused = errors.New("mind refused audio")
)

// Error is a failed answer: Kind is one of the sentinels above; Status the HTTP status when there
// was one; Message is safe to show a client (no URL, no key).
type Error struct {
	Kind    error
	Status  int
	Message string
	Err     error // the cause, for the log
}

func (e *Error) Error() string {
	s := e.Kind.Error() + ": " + e.Message
	if e.Status != 0 {
		s += fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap lets errors.Is match both the kind and the cause.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}
