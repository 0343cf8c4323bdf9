package session

import (
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/voiced/voiced/internal/testkit"
	"github.com/voiced/voiced/wire"
)

// TestModelBounded: the model a session echoes for its life is bounded (wire.MaxModelBytes):
// an over-long ?model= is refused by name before the credential is spent (the ticket still works
// after), and so is a minted session's model (beta and GA); the bound itself is accepted.
func TestModelBounded(t *testing.T) {
	testkit.CheckLeaks(t)
	ts := newTestServer(t, Config{})
	jwt := token(t, ts.clock, nil)
	long, ok := strings.Repeat("m", wire.MaxModelBytes+1), strings.Repeat("m", wire.MaxModelBytes)

	tk := ts.ticket(t)
	_, resp, err := ts.dial(t, "/v1/voice?ticket="+tk+"&model="+long, nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("an over-long ?model=: %v %v, want 400", resp, err)
	}
	c, _, err := ts.dial(t, "/v1/voice?ticket="+tk+"&model="+ok, nil)
	if err != nil {
		t.Fatalf("the ticket after the refusal: %v", err)
	}
	if got := c.expect("session.created")[0]["session"].(map[string]any)["model"]; got != ok {
		t.Fatalf("session.model %.40v…, want the %d bytes asked", got, len(ok))
	}
	c.conn.Close(websocket.StatusNormalClosure, "")

	for _, mint := range []struct {
		path string
		body map[string]any
	}{
		{"/v1/realtime/sessions", map[string]any{"model": long}},
		{"/v1/realtime/client_secrets", map[string]any{"session": map[string]any{"type": "realtime", "model": long}}},
	} {
		code, out := ts.post(t, mint.path, jwt, mint.body, nil)
		e, _ := out["error"].(map[string]any)
		if code != http.StatusBadRequest || e == nil || !strings.Contains(e["message"].(string), "'session.model': string too long") {
			t.Fatalf("%s with an over-long model: %d %v, want 400 naming session.model", mint.path, code, out)
		}
	}
}
