package door

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"
)

// Refusal is an error a door shows a client by name: {"type":"error","name":…,"message":…} in a
// socket, or the same object with an HTTP status before the upgrade. It is immutable: the With
// methods return a changed copy, so a package's refusal values cannot be altered by a caller.
// errors.Is matches refusals by name (Is), whatever their message or Retry-After.
type Refusal struct {
	status     int           // HTTP status when refused before an upgrade
	name       string        // stable machine name clients match on
	message    string        // human text, safe to show a client
	retryAfter time.Duration // sets Retry-After when > 0
	// reason, when set, counts the refusal in voiced_sessions_refused_total under this label
	// (ReasonCap, ReasonAuth, …); a refusal without one (a bad request) is not counted.
	reason string
}

// NewRefusal makes a refusal with a status, a name and a message (safe to show a client).
func NewRefusal(status int, name, message string) *Refusal {
	return &Refusal{status: status, name: name, message: message}
}

// Status is the HTTP status of a refusal before an upgrade.
func (r *Refusal) Status() int { return r.status }

// Name is the stable machine name clients match on.
func (r *Refusal) Name() string { return r.name }

// Message is the human text, safe to show a client.
func (r *Refusal) Message() string { return r.message }

// RetryAfter is the Retry-After a refusal's answer carries (0: none).
func (r *Refusal) RetryAfter() time.Duration { return r.retryAfter }

// Reason is the voiced_sessions_refused_total label it counts under ("": not counted).
func (r *Refusal) Reason() string { return r.reason }

func (r *Refusal) Error() string { return r.name + ": " + r.message }

// Is matches a refusal of the same name: errors.Is(err, ErrX) holds for ErrX and every copy of it
// (WithMessage, WithRetryAfter, …).
func (r *Refusal) Is(target error) bool {
	t, ok := target.(*Refusal)
	return ok && t != nil && t.name == r.name
}

// WithMessage is a copy of r with another message.
func (r *Refusal) WithMessage(message string) *Refusal {
	c := *r
	c.message = message
	return &c
}

// WithRetryAfter is a copy of r whose answer carries Retry-After d (rounded up to seconds).
func (r *Refusal) WithRetryAfter(d time.Duration) *Refusal {
	c := *r
	c.retryAfter = d
	return &c
}

// WithReason is a copy of r counted under reason in voiced_sessions_refused_total.
func (r *Refusal) WithReason(reason string) *Refusal {
	c := *r
	c.reason = reason
	return &c
}

// Refuse returns a copy of base with another message (base.WithMessage).
func Refuse(base *Refusal, message string) *Refusal { return base.WithMessage(message) }

// Refusals every door shares.
var (
	// ErrShuttingDown refuses a socket that arrives after shutdown began.
	ErrShuttingDown = NewRefusal(http.StatusServiceUnavailable, "shutting_down",
		"the server is shutting down; reconnect to another instance or retry shortly").WithRetryAfter(time.Second).WithReason(ReasonShuttingDown)
	// ErrOriginNotAllowed refuses a browser page from a site --allow-origin does not name.
	ErrOriginNotAllowed = NewRefusal(http.StatusForbidden, "origin_not_allowed",
		"this page's origin may not open a socket here (start voiced with --allow-origin)").WithReason(ReasonOrigin)
	// errInternal is what a client is shown for an error that is not a Refusal.
	errInternal = NewRefusal(http.StatusInternalServerError, "internal_error",
		"the server failed this request; see its log")
)

// ErrorFrame is the JSON every door sends for an error, in a socket or an HTTP body.
type ErrorFrame struct {
	Type    string `json:"type"` // always "error"
	Name    string `json:"name"`
	Message string `json:"message"`
}

// AsRefusal returns err's Refusal, or internal_error (with a generic message: the detail goes to
// the log, not the client) when it has none.
func AsRefusal(err error) *Refusal {
	var r *Refusal
	if errors.As(err, &r) {
		return r
	}
	return errInternal
}

// Frame returns the socket frame for err (AsRefusal).
func Frame(err error) ErrorFrame {
	r := AsRefusal(err)
	return ErrorFrame{Type: "error", Name: r.Name(), Message: r.Message()}
}

// WriteHeaders sets what a refusal's HTTP answer carries besides its body: Retry-After, and
// WWW-Authenticate on a 401 (unless the door set its own challenge, e.g. with error="invalid_token").
func WriteHeaders(w http.ResponseWriter, r *Refusal) {
	SetRetryAfter(w.Header(), r.RetryAfter())
	if r.Status() == http.StatusUnauthorized && w.Header().Get("WWW-Authenticate") == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="voiced"`)
	}
}

// WriteError writes err as an HTTP response: a Refusal with its status (and Retry-After), anything
// else as 500 internal_error.
func WriteError(w http.ResponseWriter, err error) {
	r := AsRefusal(err)
	WriteHeaders(w, r)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(r.Status())
	json.NewEncoder(w).Encode(Frame(err))
}
