package rtc

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/voiced/voiced/session"
	"github.com/voiced/voiced/speechcore"
)

// TestCallRefusedNotWarm: while the speech models are not warm (the readiness seam says so, as the
// speech service does while it loads), a call's offer is refused with the WebSocket handshake's
// status and name. A built binary warms the fixture mount before it listens, so this is provoked
// here, on the real session.Server and Signal.
func TestCallRefusedNotWarm(t *testing.T) {
	srv, err := session.New(session.Config{Engines: session.Engines{Ready: func() error { return speechcore.ErrNotWarm }}})
	if err != nil {
		t.Fatal(err)
	}
	sig := &Signal{Sessions: srv} // no Endpoint: admission must refuse before an answer is tried
	refusal := func(h http.HandlerFunc, r *http.Request) (int, string) {
		w := httptest.NewRecorder()
		h(w, r)
		var e struct{ Name string }
		json.Unmarshal(w.Body.Bytes(), &e)
		return w.Code, e.Name
	}
	call := httptest.NewRequest("POST", "/v1/realtime/calls", strings.NewReader(chromeOffer))
	call.Header.Set("Content-Type", "application/sdp")
	call.Header.Set("Authorization", "Bearer ek_"+strings.Repeat("0", 43))
	socket := httptest.NewRequest("GET", "/v1/realtime?model=m", nil)
	for k, v := range map[string]string{"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
		"Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Authorization": "Bearer ek_" + strings.Repeat("0", 43)} {
		socket.Header.Set(k, v)
	}
	cs, cn := refusal(sig.ServeCalls, call)
	ws, wn := refusal(srv.ServeRealtime, socket)
	if cs != http.StatusServiceUnavailable || cn != "speech_not_warm" || cs != ws || cn != wn {
		t.Errorf("not warm: call %d %q, socket %d %q; want both 503 speech_not_warm", cs, cn, ws, wn)
	}
}
