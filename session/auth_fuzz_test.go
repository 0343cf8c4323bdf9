package session

import (
	"errors"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/voiced/voiced/door"
)

// FuzzAuthenticate: whatever a handshake carries in ?ticket=, the subprotocol list and the
// Authorization header, authenticate answers a grant for a subject or a named refusal; never a
// panic, never a grant without a subject. bearer never returns padding or a value from a header
// that is not a Bearer one.
func FuzzAuthenticate(f *testing.F) {
	ts := newTestServer(f, Config{})
	jwt := token(f, ts.clock, nil)
	f.Add("", "realtime, openai-insecure-api-key."+ts.ticket(f), "")
	f.Add(ts.ticket(f), "", "")
	f.Add("", "", "Bearer "+jwt)
	f.Add("", "", "bearer   "+jwt+"  ")
	f.Add("", "openai-insecure-api-key.null", "Basic abc")
	f.Add("vt_", "openai-insecure-api-key.", "Bearer vt_x.y")
	f.Add("", "", "Bearer")
	f.Add("", "a,,b,openai-insecure-api-key.eyJ.x.y", "BEARER \t")
	f.Fuzz(func(t *testing.T, ticket, protocols, authorization string) {
		r := httptest.NewRequest("GET", "/v1/realtime?ticket="+url.QueryEscape(ticket), nil)
		if protocols != "" {
			r.Header["Sec-Websocket-Protocol"] = []string{protocols}
		}
		if authorization != "" {
			r.Header["Authorization"] = []string{authorization}
		}
		if b := bearer(r); b != "" {
			if b != strings.TrimSpace(b) || len(authorization) < 7 || !strings.EqualFold(authorization[:7], "bearer ") ||
				!strings.Contains(authorization, b) {
				t.Fatalf("bearer(%q) = %q", authorization, b)
			}
		}
		g, err := ts.authenticate(r, ts.cfg.Tickets.Take)
		if err == nil {
			if g.Principal.Subject == "" {
				t.Fatalf("a grant without a subject from ticket %q protocols %q authorization %q", ticket, protocols, authorization)
			}
			return
		}
		var ref *door.Refusal
		if !errors.As(err, &ref) || ref.Name() == "" || ref.Message() == "" || ref.Status() < 400 {
			t.Fatalf("ticket %q protocols %q authorization %q: %v is not a named refusal", ticket, protocols, authorization, err)
		}
	})
}
