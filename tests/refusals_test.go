package tests

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestRealtimeRefusals: bad credentials are refused before the upgrade by name; bad events on an
// open conversation get an error event carrying the code clients match on (realtime-protocol.md
// §9) and the client's event_id, and the session stays open.
func TestRealtimeRefusals(t *testing.T) {
	checkLeaks(t)
	s := startRealtime(t, serverOpts{})

	t.Run("credentials", func(t *testing.T) {
		other := *s
		other.Secret = []byte("a-different-secret-of-at-least-32-bytes!!")
		cases := map[string]struct {
			bearer string
			want   int
		}{
			"none":            {"", http.StatusUnauthorized},
			"service token":   {s.Token, http.StatusUnauthorized},
			"JWT without sub": {s.jwt("", "acme"), http.StatusUnauthorized},
			"JWT bad key":     {other.jwt("mallory", ""), http.StatusUnauthorized},
			"not a JWT":       {"ek_notaticket", http.StatusUnauthorized},
		}
		for name, tc := range cases {
			t.Run(name, func(t *testing.T) {
				code, body := s.post(t, "/v1/realtime/sessions", tc.bearer, `{}`)
				if code != tc.want || !strings.Contains(string(body), "error") {
					t.Fatalf("POST /v1/realtime/sessions: %d %s, want %d with a named error", code, body, tc.want)
				}
			})
		}
	})

	t.Run("ticket used twice", func(t *testing.T) {
		ticket := s.mintBeta(t, s.jwt("once", ""))
		c := s.dialRealtime(t, ticket, true)
		c.until("session.created", nil)
		c.close()
		_, resp, err := websocket.Dial(ctxT(t, 10*time.Second), s.WSBase+"/v1/realtime?model=m", &websocket.DialOptions{
			HTTPClient: s.Client, HTTPHeader: http.Header{"Authorization": {"Bearer " + ticket}, "OpenAI-Beta": {"realtime=v1"}},
		})
		if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("second use of a ticket: err %v; want HTTP 401", err)
		}
	})

	t.Run("events", func(t *testing.T) {
		c := s.dialRealtime(t, s.mintBeta(t, s.jwt("bad-events", "")), true)
		c.until("session.created", nil)
		c.send(betaSessionUpdate(nil))
		c.until("session.updated", nil)
		cases := []struct {
			name, frame, code string // code "" = any non-empty code
			eventID           string
		}{
			{"malformed JSON", `{"type":"input_audio_buffer.append",`, "", ""},
			{"unknown type", `{"type":"no.such.event","event_id":"ev_unknown"}`, "", "ev_unknown"},
			{"base64 that does not decode", `{"type":"input_audio_buffer.append","event_id":"ev_b64","audio":"@@not base64@@"}`, "", "ev_b64"},
			{"commit on an empty buffer", `{"type":"input_audio_buffer.commit","event_id":"ev_commit"}`, "input_audio_buffer_commit_empty", "ev_commit"},
			{"cancel with none active", `{"type":"response.cancel","event_id":"ev_cancel"}`, "response_cancel_not_active", "ev_cancel"},
			{"truncate an unknown item", `{"type":"conversation.item.truncate","event_id":"ev_trunc","item_id":"item_nope","content_index":0,"audio_end_ms":10}`, "item_truncate_invalid_item_id", "ev_trunc"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				if err := c.conn.Write(ctxT(t, 5*time.Second), websocket.MessageText, []byte(tc.frame)); err != nil {
					t.Fatal(err)
				}
				evs := c.until("error", nil)
				e := evs[len(evs)-1]
				code := e.str("error", "code")
				if (tc.code != "" && code != tc.code) || code == "" || e.str("error", "message") == "" {
					t.Errorf("error event %s, want code %q", e.Raw, tc.code)
				}
				if tc.eventID != "" && e.str("error", "event_id") != tc.eventID {
					t.Errorf("error event %s does not name the client event %q", e.Raw, tc.eventID)
				}
			})
		}
		// Still open: a text turn works (a long one, so that it is still running when the
		// second response.create arrives).
		c.send(textItem(longText(40)))
		c.until("conversation.item.created", nil)
		c.send(map[string]any{"type": "response.create"})
		c.send(map[string]any{"type": "response.create", "event_id": "ev_second"})
		evs := c.until("error", nil)
		if e := evs[len(evs)-1]; e.str("error", "code") != "conversation_already_has_active_response" {
			t.Errorf("response.create during a response: %s", e.Raw)
		}
		c.until("response.done", nil)
		c.checkStrict()
		c.close()
	})
	s.stop()
}
