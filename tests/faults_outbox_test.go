package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestFaultsOutboxBytes (issue 18, server→client queues): the writer's queue was bounded in
// events (256), not bytes, and a small client event can ask for a large one: once a session holds
// 512 KiB of instructions and 512 KiB of tools, every session.update of a few bytes is answered
// with a session.updated of ~1 MiB. A client that sends 250 of them and reads nothing had the
// server hold 250 MiB for it until the slow-client close. The queue is bounded in bytes too now
// (one event larger than the bound goes alone); its senders wait, and the conversation is closed
// as before when the client reads nothing.
func TestFaultsOutboxBytes(t *testing.T) {
	checkLeaks(t)
	s := startRealtime(t, serverOpts{})
	// A socket of its own, read by the test alone: it reads until the session is set, then stops.
	conn, _, err := websocket.Dial(ctxT(t, 30*time.Second), s.WSBase+"/v1/realtime?model=gpt-realtime", &websocket.DialOptions{
		HTTPClient: s.Client, Subprotocols: []string{"realtime"},
		HTTPHeader: http.Header{"Authorization": {"Bearer " + s.jwt("faults-outbox-"+randHex(4), "")}, "OpenAI-Beta": {"realtime=v1"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	conn.SetReadLimit(64 << 20)
	write := func(b []byte) error { return conn.Write(ctxT(t, 30*time.Second), websocket.MessageText, b) }
	var tools []map[string]any
	for i := range 100 {
		tools = append(tools, map[string]any{"type": "function", "name": fmt.Sprint("tool_", i),
			"description": strings.Repeat("d", 5000), "parameters": map[string]any{"type": "object"}})
	}
	set, _ := json.Marshal(map[string]any{"type": "session.update", "session": map[string]any{
		"instructions": strings.Repeat("i", 500<<10), "tools": tools}})
	if err := write(set); err != nil {
		t.Fatal(err)
	}
	echo := 0
	for echo == 0 {
		_, b, err := conn.Read(ctxT(t, 30*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b[:min(len(b), 200)], []byte(`"session.updated"`)) {
			echo = len(b)
		} else if bytes.Contains(b[:min(len(b), 200)], []byte(`"error"`)) {
			t.Fatalf("%.300s", b)
		}
	}
	done := s.memoryGuard(t, 64)
	const n = 250
	for i := range n {
		if err := write(fmt.Appendf(nil, `{"type":"session.update","event_id":"evt_%d","session":{}}`, i)); err != nil {
			t.Logf("write %d: %v", i, err)
			break
		}
	}
	for i := 0; i < 30 && !s.logs.has("realtime client stopped reading"); i++ { // the slow-client close: ~10 s
		time.Sleep(time.Second)
	}
	growth := done()
	if !s.logs.has("realtime client stopped reading") {
		t.Errorf("no slow-client close in 30 s")
	}
	t.Logf("session.updated is %d KiB; %d small session.updates unread: server peak RSS +%d MiB", echo>>10, n, growth)
	s.stop()
}
