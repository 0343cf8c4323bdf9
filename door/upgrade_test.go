package door

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestIsUpgrade: what Kit.Upgrade lets through to admission is what websocket.Accept takes; a
// link preview's GET or HEAD, or half a handshake, is not.
func TestIsUpgrade(t *testing.T) {
	handshake := map[string]string{"Connection": "keep-alive, Upgrade", "Upgrade": "websocket",
		"Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
	for name, tc := range map[string]struct {
		method string
		drop   string // a header removed from the handshake
		set    [2]string
		want   bool
	}{
		"handshake":       {method: "GET", want: true},
		"HEAD":            {method: "HEAD"},
		"POST":            {method: "POST"},
		"no Connection":   {method: "GET", drop: "Connection"},
		"no Upgrade":      {method: "GET", drop: "Upgrade"},
		"no key":          {method: "GET", drop: "Sec-WebSocket-Key"},
		"short key":       {method: "GET", set: [2]string{"Sec-WebSocket-Key", "c2hvcnQ="}},
		"version 8":       {method: "GET", set: [2]string{"Sec-WebSocket-Version", "8"}},
		"upgrade to h2c":  {method: "GET", set: [2]string{"Upgrade", "h2c"}},
		"upgrade, spaced": {method: "GET", set: [2]string{"Upgrade", " WebSocket "}, want: true},
	} {
		r := httptest.NewRequest(tc.method, "/v1/voice?ticket=ek_x", nil)
		for k, v := range handshake {
			if k != tc.drop {
				r.Header.Set(k, v)
			}
		}
		if tc.set[0] != "" {
			r.Header.Set(tc.set[0], tc.set[1])
		}
		if got := IsUpgrade(r); got != tc.want {
			t.Errorf("%s: IsUpgrade %v, want %v", name, got, tc.want)
		}
	}

	// Kit.Upgrade refuses a plain GET by name before admit runs.
	admitted := false
	w := httptest.NewRecorder()
	_, _, _, ok := Kit{}.Upgrade(w, httptest.NewRequest("GET", "/v1/transcribe", nil),
		func() (func(), error) { admitted = true; return nil, nil }, nil)
	if ok || admitted || w.Code != http.StatusUpgradeRequired || w.Header().Get("Upgrade") != "websocket" {
		t.Errorf("plain GET: ok %v admitted %v status %d Upgrade %q; want refused 426 before admit", ok, admitted, w.Code, w.Header().Get("Upgrade"))
	}
}
