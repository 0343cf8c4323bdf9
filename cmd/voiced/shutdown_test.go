package main

import (
	"context"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// SIGTERM with a socket open: the socket is told to drain and closes with StatusGoingAway, the
// server waits for it, then exits 0 — http.Server.Shutdown alone would not see the socket.
func TestShutdownDrainsSockets(t *testing.T) {
	mount := writeFixtureMount(t)
	srv := startServer(t, append(baseEnv(t), "VOICED_TOKEN=t", "VOICED_SPEECH_ASSETS="+mount), "--shutdown-grace", "30s")
	base := "http://" + srv.addr
	h := request(t, http.DefaultClient, "GET", base+"/health", "").body
	if speech, _ := h["speech"].(map[string]any); speech["warm"] != true {
		t.Fatalf("the speech service is not warm on the fixture mount (%v): no door can hold a socket open", speech)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, "ws://"+srv.addr+"/v1/transcribe", &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer t"}},
	})
	if err != nil {
		t.Fatalf("dial /v1/transcribe: %v (%v)", err, resp)
	}
	defer conn.CloseNow()
	if _, msg, err := conn.Read(ctx); err != nil || !strings.Contains(string(msg), `"ready"`) {
		t.Fatalf("first frame %q, %v; want ready", msg, err)
	}
	// Half a second of silence: an open segment the drain must finish.
	if err := conn.Write(ctx, websocket.MessageBinary, make([]byte, 16000)); err != nil {
		t.Fatal(err)
	}
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for {
		_, _, err := conn.Read(ctx)
		if err == nil {
			continue // the final transcript, if any
		}
		if st := websocket.CloseStatus(err); st != websocket.StatusGoingAway {
			t.Errorf("socket ended with %v (status %v), want StatusGoingAway", err, st)
		}
		break
	}
	if code := srv.wait(); code != 0 {
		t.Fatalf("exit %d, want 0", code)
	}
	logs := drain(srv.logs)
	if strings.Contains(logs, "sockets cancelled") || strings.Contains(logs, "did not close") {
		t.Errorf("the socket was not drained within the grace period:\n%s", logs)
	}
}
