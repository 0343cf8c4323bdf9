package door

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// OpenAIError is OpenAI's error object, the "error" member of its error bodies, which the OpenAI
// SDKs parse: a refusal's name is its code.
type OpenAIError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"` // invalid_request_error, or server_error for a 5xx
	Param   *string `json:"param"`
	Code    string  `json:"code"`
}

// OpenAIErrorOf is r in OpenAI's shape; param names the request field at fault ("" for none: null).
func OpenAIErrorOf(r *Refusal, param string) OpenAIError {
	e := OpenAIError{Message: r.Message(), Type: "invalid_request_error", Code: r.Name()}
	if r.Status() >= 500 {
		e.Type = "server_error"
	}
	if param != "" {
		e.Param = &param
	}
	return e
}

// WriteOpenAIError writes err as OpenAI's error body, {"error":{message,type,param,code}}, with
// its refusal's status and headers (WriteHeaders); an error that is no Refusal is 500
// internal_error (AsRefusal).
func WriteOpenAIError(w http.ResponseWriter, err error, param string) {
	r := AsRefusal(err)
	WriteHeaders(w, r)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(r.Status())
	json.NewEncoder(w).Encode(struct {
		Error OpenAIError `json:"error"`
	}{OpenAIErrorOf(r, param)})
}

// SetRetryAfter sets Retry-After to d in whole seconds, rounded up (a client told 0 would retry
// at once); d ≤ 0 sets nothing.
func SetRetryAfter(h http.Header, d time.Duration) {
	if d > 0 {
		h.Set("Retry-After", strconv.Itoa(int((d+time.Second-1)/time.Second)))
	}
}
