package rtc

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/session"
)

// TestSidebandThroughDoorKit: the sideband socket opens through the conversations' door kit like
// every other socket: a page from a foreign origin is refused 403 origin_not_allowed, and once
// shutdown began (the drain registry) 503 shutting_down; neither keeps the tap on the call.
func TestSidebandThroughDoorKit(t *testing.T) {
	sockets := door.NewSockets()
	srv, err := session.New(session.Config{Tickets: session.NewMemoryTickets(nil),
		Origins: door.MustOrigins("https://app.example.com"), Sockets: sockets})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Wait()
	tr := NewTransport()
	sig := &Signal{Sessions: srv, calls: map[string]*Transport{"rtc_side": tr}}
	handshake := func(origin string) *http.Request {
		r := httptest.NewRequest("GET", "http://voiced.local/v1/realtime?call_id=rtc_side", nil)
		r.Header.Set("Connection", "Upgrade")
		r.Header.Set("Upgrade", "websocket")
		r.Header.Set("Sec-WebSocket-Version", "13")
		r.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		return r
	}
	refused := func(r *http.Request, status int, name string) {
		t.Helper()
		w := httptest.NewRecorder()
		sig.ServeSideband(w, r)
		var e struct{ Name string }
		json.Unmarshal(w.Body.Bytes(), &e)
		if w.Code != status || e.Name != name {
			t.Errorf("%d %q (%s), want %d %q", w.Code, e.Name, w.Body, status, name)
		}
		tr.tapMu.Lock()
		defer tr.tapMu.Unlock()
		if len(tr.taps) != 0 {
			t.Errorf("%d taps left on the call after a refusal", len(tr.taps))
		}
	}
	refused(handshake("https://evil.example"), http.StatusForbidden, "origin_not_allowed")

	if cancelled, stuck := sockets.Shutdown(context.Background(), 0); cancelled != 0 || stuck != 0 {
		t.Fatalf("Shutdown = %d, %d", cancelled, stuck)
	}
	refused(handshake("https://app.example.com"), http.StatusServiceUnavailable, "shutting_down")
	refused(handshake(""), http.StatusServiceUnavailable, "shutting_down")
}
