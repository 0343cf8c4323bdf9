package mcptool

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/voiced/voiced/internal/mcptest"
	"github.com/voiced/voiced/internal/testkit"
)

func connect(t *testing.T, cfg Config, srv *mcptest.Server, headers http.Header) *Session {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdle)
	s, err := c.Connect(context.Background(), Server{URL: srv.URL, Headers: headers})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// A real MCP server (the same SDK) on loopback: listed, called, its result and its errors.
func TestListAndCall(t *testing.T) {
	testkit.CheckLeaks(t)
	srv := mcptest.Start()
	defer srv.Close()
	s := connect(t, Config{AllowHosts: []string{srv.Host()}}, srv, http.Header{"Authorization": {"Bearer tok-1"}})
	ctx := context.Background()
	tools, err := s.ListTools(ctx, func(name string) bool { return name != "echo" })
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
		if tl.Name == "lookup_order" && !strings.Contains(string(tl.InputSchema), "order_id") {
			t.Errorf("lookup_order's schema %s", tl.InputSchema)
		}
	}
	if strings.Join(names, ",") != "big,fail,lookup_order" {
		t.Errorf("tools %v (echo filtered out)", names)
	}
	out, err := s.Call(ctx, "lookup_order", `{"order_id":"A17"}`)
	if err != nil || out != mcptest.OrderStatus("A17") {
		t.Fatalf("lookup_order: %q %v", out, err)
	}
	_, err = s.Call(ctx, "fail", "")
	var ce *CallError
	if !errors.As(err, &ce) || ce.Type != "tool_execution_error" || ce.Message != "the warehouse is closed" || !errors.Is(err, ErrToolFailed) {
		t.Errorf("fail: %v", err)
	}
	_, err = s.Call(ctx, "no_such_tool", "{}")
	if !errors.As(err, &ce) || ce.Type != "protocol_error" || ce.Code == 0 {
		t.Errorf("unknown tool: %#v", err)
	}
	if _, err = s.Call(ctx, "echo", `[1,2]`); !errors.As(err, &ce) || ce.Type != "protocol_error" {
		t.Errorf("arguments not an object: %v", err)
	}
	for _, h := range srv.Headers() {
		if h.Get("Authorization") != "Bearer tok-1" {
			t.Fatalf("a request without the session's Authorization: %v", h)
		}
	}
}

// The operator's allow-list decides: nothing allowed is MCP off; another host, another port, a
// redirect are refused by name.
func TestAllowList(t *testing.T) {
	testkit.CheckLeaks(t)
	srv := mcptest.Start()
	defer srv.Close()
	ctx := context.Background()
	host, port, _ := strings.Cut(srv.Host(), ":")
	tests := map[string]struct {
		allow []string
		url   string
		want  error
	}{
		"off":            {nil, srv.URL, ErrDisabled},
		"other host":     {[]string{"example.com"}, srv.URL, ErrHostNotAllowed},
		"other port":     {[]string{host + ":1"}, srv.URL, ErrHostNotAllowed},
		"localhost name": {[]string{"localhost"}, srv.URL, ErrHostNotAllowed},
		"not http":       {[]string{host}, "file:///etc/passwd", ErrBadURL},
		"user info":      {[]string{host}, "http://u:p@" + srv.Host() + "/mcp", ErrBadURL},
		"redirect":       {[]string{host}, "http://" + srv.Host() + "/moved", ErrRedirect},
		"host any port":  {[]string{host}, srv.URL, nil},
		"host:port":      {[]string{"127.0.0.1:" + port}, srv.URL, nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c, err := New(Config{AllowHosts: tc.allow, ConnectTimeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer c.CloseIdle()
			s, err := c.Connect(ctx, Server{URL: tc.url})
			if s != nil {
				s.Close()
			}
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
		})
	}
	if _, err := New(Config{AllowHosts: []string{"https://x.example/"}}); err == nil {
		t.Error("an allow-list entry with a scheme was accepted")
	}
}

// A response past MaxResponseBytes fails the call by name; an output past MaxOutputBytes is cut;
// more tools than MaxTools fail the list.
func TestBounds(t *testing.T) {
	testkit.CheckLeaks(t)
	srv := mcptest.Start()
	defer srv.Close()
	ctx := context.Background()
	small := connect(t, Config{AllowHosts: []string{srv.Host()}, MaxResponseBytes: 64 << 10}, srv, nil)
	_, err := small.Call(ctx, "big", "{}")
	var ce *CallError
	if !errors.As(err, &ce) || ce.Type != "http_error" || !errors.Is(err, ErrResponseTooLarge) {
		t.Errorf("a 200 KiB response under a 64 KiB bound: %v (%v)", err, ce.Err)
	}
	cut := connect(t, Config{AllowHosts: []string{srv.Host()}, MaxOutputBytes: 1000}, srv, nil)
	if out, err := cut.Call(ctx, "big", "{}"); err != nil || len(out) != 1000 {
		t.Errorf("output cut to 1000 bytes: %d %v", len(out), err)
	}
	few := connect(t, Config{AllowHosts: []string{srv.Host()}, MaxTools: 2}, srv, nil)
	if _, err := few.ListTools(ctx, nil); !errors.Is(err, ErrTooManyTools) {
		t.Errorf("4 tools under a bound of 2: %v", err)
	}
}

// BenchmarkCall: one lookup_order call on an open session against the loopback test server
// (voiced's share of an MCP call's latency: the SDK, JSON-RPC, HTTP, the guard).
func BenchmarkCall(b *testing.B) {
	srv := mcptest.Start()
	defer srv.Close()
	c, err := New(Config{AllowHosts: []string{srv.Host()}, MaxResponseBytes: 64 << 10})
	if err != nil {
		b.Fatal(err)
	}
	defer c.CloseIdle()
	s, err := c.Connect(context.Background(), Server{URL: srv.URL})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ResetTimer()
	for range b.N {
		if _, err := s.Call(context.Background(), "lookup_order", `{"order_id":"A17"}`); err != nil {
			b.Fatal(err)
		}
	}
}
