package door

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"
)

// Refusal is an error a door shows a client by name: {"type":"error","name":…,"message":…} in a
// socket, or the same object with an HTTP status before the upgrade. Message must be safe to show.
type Refusal struct {
	Status     int           // HTTP status when refused before an upgrade
	Name       string        // stable machine name clients match on
	Message    string        // human text, safe to show a client
	RetryAfter time.Duration // sets Retry-After when > 0
	// Reason, when set, counts the refusal in voiced_sessions_refused_total under this label
	// (ReasonCap, ReasonAuth, …); a refusal without one (a bad request) is not counted.
	Reason string
}

func (r *Refusal) Error() string { return r.Name + ": " + r.Message }

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

// Refusals every door shares.
var (
	// ErrShuttingDown refuses a socket that arrives after shutdown began.
	ErrShuttingDown = &Refusal{Status: http.StatusServiceUnavailable, Name: "shutting_down",
		Message: "the server is shutting down; reconnect to another instance or retry shortly", RetryAfter: time.Second,
		Reason: ReasonShuttingDown}
	// ErrOriginNotAllowed refuses a browser page from a site --allow-origin does not name.
	ErrOriginNotAllowed = &Refusal{Status: http.StatusForbidden, Name: "origin_not_allowed",
		Message: "this page's origin may not open a socket here (start voiced with --allow-origin)", Reason: ReasonOrigin}
	// errInternal is what a client is shown for an error that is not a Refusal.
	errInternal = &Refusal{Status: http.StatusInternalServerError, Name: "internal_error",
		Message: "the server failed this request; see its log"}
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
	return ErrorFrame{Type: "error", Name: r.Name, Message: r.Message}
}

// WriteHeaders sets what a refusal's HTTP answer carries besides its body: Retry-After, and
// WWW-Authenticate on a 401.
func WriteHeaders(w http.ResponseWriter, r *Refusal) {
	SetRetryAfter(w.Header(), r.RetryAfter)
	if r.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="voiced"`)
	}
}

// WriteError writes err as an HTTP response: a Refusal with its status (and Retry-After), anything
// else as 500 internal_error.
func WriteError(w http.ResponseWriter, err error) {
	r := AsRefusal(err)
	WriteHeaders(w, r)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(r.Status)
	json.NewEncoder(w).Encode(Frame(err))
}
