package main

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

var debugAddrLine = regexp.MustCompile(`debugAddr=(\S+)`)

// The profiling listener serves the profiles and the trace on its own loopback address, and the
// public listener never does.
func TestDebugListener(t *testing.T) {
	srv := startServer(t, append(baseEnv(t), "VOICED_TOKEN=tok"), "--debug-addr", "127.0.0.1:0")
	var debugAddr string
	for deadline := time.Now().Add(10 * time.Second); debugAddr == "" && time.Now().Before(deadline); {
		select {
		case line := <-srv.logs:
			if m := debugAddrLine.FindStringSubmatch(line); m != nil {
				debugAddr = m[1]
			}
		case <-time.After(100 * time.Millisecond):
		}
	}
	if debugAddr == "" {
		t.Fatal("no debugAddr= in the log")
	}
	get := func(url string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, body
	}
	debug := "http://" + debugAddr + "/debug/pprof/"
	if code, body := get(debug); code != 200 || !strings.Contains(string(body), "goroutine") {
		t.Errorf("index: %d %.200s", code, body)
	}
	// A CPU profile is gzip-compressed protobuf; the trace starts with the runtime's header.
	if code, body := get(debug + "profile?seconds=1"); code != 200 || len(body) < 2 || body[0] != 0x1f || body[1] != 0x8b {
		t.Errorf("profile: %d, %d bytes", code, len(body))
	}
	if code, body := get(debug + "trace?seconds=1"); code != 200 || !strings.HasPrefix(string(body), "go 1.") {
		t.Errorf("trace: %d %.20q", code, body)
	}
	if code, body := get(debug + "goroutine?debug=1"); code != 200 || !strings.Contains(string(body), "goroutine profile") {
		t.Errorf("goroutine: %d %.200s", code, body)
	}
	// The public listener, even with the service token, has no profiles.
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/profile?seconds=1", "/debug/pprof/trace"} {
		if code, _ := get("http://" + srv.addr + path); code != http.StatusNotFound {
			t.Errorf("public %s: %d, want 404", path, code)
		}
	}
	if code := srv.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("SIGTERM: exit %d\n%s", code, drain(srv.logs))
	}
}

func TestDebugAddrLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "[::1]:6060", "localhost:6060"} {
		if err := (&debugConfig{addr: addr}).validate(); err != nil {
			t.Errorf("%s: %v", addr, err)
		}
	}
	for _, addr := range []string{"0.0.0.0:6060", ":6060", "10.0.0.5:6060", "[::]:6060", "example.com:6060", "127.0.0.1"} {
		if err := (&debugConfig{addr: addr}).validate(); err == nil || !strings.Contains(err.Error(), "--debug-addr") {
			t.Errorf("%s: %v, want a refusal naming --debug-addr", addr, err)
		}
	}
}
