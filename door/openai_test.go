package door

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestWriteOpenAIError(t *testing.T) {
	busy := NewRefusal(http.StatusTooManyRequests, "busy", "later").WithRetryAfter(1500 * time.Millisecond)
	tests := map[string]struct {
		err        error
		param      string
		status     int
		body       string
		retryAfter string
	}{
		"refusal with a param": {busy, "input", 429,
			`{"error":{"message":"later","type":"invalid_request_error","param":"input","code":"busy"}}`, "2"},
		"server side": {NewRefusal(503, "down", "m"), "", 503,
			`{"error":{"message":"m","type":"server_error","param":null,"code":"down"}}`, ""},
		"not a refusal": {errors.New("boom"), "", 500,
			`{"error":{"message":"the server failed this request; see its log","type":"server_error","param":null,"code":"internal_error"}}`, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w := httptest.NewRecorder()
			WriteOpenAIError(w, tc.err, tc.param)
			var got, want any
			if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			json.Unmarshal([]byte(tc.body), &want)
			gb, _ := json.Marshal(got)
			wb, _ := json.Marshal(want)
			if w.Code != tc.status || string(gb) != string(wb) || w.Header().Get("Retry-After") != tc.retryAfter ||
				w.Header().Get("Content-Type") != "application/json" {
				t.Errorf("%d %s Retry-After %q, want %d %s %q", w.Code, w.Body, w.Header().Get("Retry-After"), tc.status, tc.body, tc.retryAfter)
			}
		})
	}
}

func TestSetRetryAfter(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "", -time.Second: "", time.Nanosecond: "1", time.Second: "1",
		time.Second + time.Millisecond: "2", 5 * time.Second: "5"} {
		h := http.Header{}
		SetRetryAfter(h, d)
		if got := h.Get("Retry-After"); got != want {
			t.Errorf("SetRetryAfter(%v) = %q, want %q", d, got, want)
		}
	}
}
