package tests

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// faultyMind is an OpenAI-compatible chat-completions server whose next answers fail as the
// test says: mode is read once per request. "ok" answers "All good." and stops.
type faultyMind struct {
	mu   sync.Mutex
	mode string
	quit chan struct{} // closed at cleanup: every stalled handler returns

	addr string
	srv  *http.Server
	ln   net.Listener
	wg   sync.WaitGroup // the serving goroutine
}

func newFaultyMind(t *testing.T) *faultyMind {
	t.Helper()
	f := &faultyMind{mode: "ok", quit: make(chan struct{})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.addr = ln.Addr().String()
	f.serve(ln)
	t.Cleanup(func() {
		close(f.quit)
		f.down()
	})
	return f
}

func (f *faultyMind) serve(ln net.Listener) {
	f.ln = ln
	f.srv = &http.Server{Handler: f}
	f.wg.Add(1)
	go func() { defer f.wg.Done(); _ = f.srv.Serve(ln) }()
}

// down closes the listener and every connection: the next dial is refused.
func (f *faultyMind) down() {
	if f.srv != nil {
		_ = f.srv.Close()
		f.wg.Wait()
		f.srv = nil
	}
}

// up listens again on the same address.
func (f *faultyMind) up(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		t.Fatalf("the fake mind cannot listen on %s again: %v", f.addr, err)
	}
	f.serve(ln)
}

func (f *faultyMind) set(mode string) {
	f.mu.Lock()
	f.mode = mode
	f.mu.Unlock()
}

func (f *faultyMind) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req map[string]any
	if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	mode := f.mode
	f.mu.Unlock()
	stall := func() {
		select {
		case <-r.Context().Done(): // voiced gave up (its --mind-timeout) and closed the request
		case <-f.quit:
		}
	}
	if mode == "500" {
		http.Error(w, `{"error":{"message":"boom","type":"server_error"}}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	send := func(delta map[string]any, finish any) {
		b, _ := json.Marshal(map[string]any{"id": "chatcmpl-f", "object": "chat.completion.chunk", "model": "fake",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
		fmt.Fprintf(w, "data: %s\n\n", b)
		w.(http.Flusher).Flush()
	}
	switch mode {
	case "stall-first":
		stall()
	case "stall-mid":
		send(map[string]any{"role": "assistant", "content": "Let me think. "}, nil)
		stall()
	case "malformed":
		fmt.Fprint(w, "data: {\"choices\": [ this is not json\n\n")
		w.(http.Flusher).Flush()
		stall() // voiced must give up on the bad line, not wait for more
	case "close-mid-tool":
		send(map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"index": 0, "id": "call_f_1", "type": "function",
			"function": map[string]any{"name": "get_weather", "arguments": `{"city":`}}}}, nil)
		panic(http.ErrAbortHandler) // the connection is cut: no finish_reason, no [DONE]
	default:
		for _, word := range strings.SplitAfter("All good.", " ") {
			send(map[string]any{"content": word}, nil)
		}
		send(map[string]any{}, "stop")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}
}

// turnOutcome sends a text turn and reads through its response.done, returning the error events
// seen on the way, the response's status and its transcript.
func turnOutcome(t *testing.T, c *rtConn, text string) (errs []rtEvent, status, transcript string) {
	t.Helper()
	c.send(textItem(text))
	c.send(map[string]any{"type": "response.create"})
	var evs []rtEvent
	for {
		ev, ok := c.next(60 * time.Second)
		if !ok {
			t.Fatalf("socket ended waiting for response.done; got %v", types(evs))
		}
		evs = append(evs, ev)
		if ev.Type == "error" {
			errs = append(errs, ev)
		}
		if ev.Type == "response.done" {
			return errs, ev.str("response", "status"), replyTranscript(evs)
		}
	}
}

// TestFaultsMind: each way the mind's server can fail gives the client a named error event
// (server_error / response_failed) and a failed response.done, and the conversation goes on: the
// next text turn on the same socket is answered.
func TestFaultsMind(t *testing.T) {
	checkLeaks(t)
	needFlag(t, "mind-url", "mind-timeout")
	mind := newFaultyMind(t)
	s := startRealtime(t, serverOpts{Args: []string{"--mind-url", "http://" + mind.addr + "/v1", "--mind-model", "fake-model",
		"--mind-timeout", "1s"}})
	c := s.dialRealtime(t, s.mintBeta(t, s.jwt("faults-mind-"+randHex(4), "")), true)
	c.until("session.created", nil)
	update := betaSessionUpdate(nil)
	update["session"].(map[string]any)["tools"] = []any{map[string]any{"type": "function", "name": "get_weather",
		"description": "Weather for a city", "parameters": map[string]any{"type": "object",
			"properties": map[string]any{"city": map[string]any{"type": "string"}}}}}
	c.send(update)
	c.until("session.updated", nil)

	if _, status, tr := turnOutcome(t, c, "Are you there?"); status != "completed" || !strings.Contains(tr, "All good.") {
		t.Fatalf("healthy mind: status %q transcript %q", status, tr)
	}
	for _, tt := range []struct {
		name, mode string
	}{
		{"refuses connections", "refuse"},
		{"answers 500", "500"},
		{"stalls before the first token", "stall-first"},
		{"stalls mid-stream", "stall-mid"},
		{"malformed SSE", "malformed"},
		{"closes mid-tool-call", "close-mid-tool"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.mode == "refuse" {
				mind.down()
			}
			mind.set(tt.mode)
			errs, status, _ := turnOutcome(t, c, "What is the weather in Paris?")
			if len(errs) != 1 {
				t.Errorf("%d error events, want 1: %v", len(errs), errs)
			}
			for _, e := range errs {
				if e.str("error", "type") != "server_error" || e.str("error", "code") != "response_failed" || e.str("error", "message") == "" {
					t.Errorf("error event %s, want type server_error, code response_failed and a message", e.Raw)
				} else {
					t.Logf("error: %s", e.str("error", "message"))
				}
			}
			if status != "failed" && status != "incomplete" {
				t.Errorf("response.done status %q after the mind failed, want failed", status)
			}
			mind.set("ok")
			if tt.mode == "refuse" {
				mind.up(t)
			}
			errs, status, tr := turnOutcome(t, c, "And now?")
			if len(errs) != 0 || status != "completed" || !strings.Contains(tr, "All good.") {
				t.Errorf("the next turn: errors %v status %q transcript %q, want completed with the mind's answer", errs, status, tr)
			}
		})
	}
	c.checkStrict()
	c.close()
	s.stop()
}
