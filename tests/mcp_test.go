package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voiced/voiced/internal/mcptest"
)

// orderLLM stands in for an OpenAI-compatible model using an MCP tool: offered lookup_order and
// with no tool result yet, it calls lookup_order({"order_id":"A17"}); given the result, it says
// "Your order: <result>".
type orderLLM struct {
	mu       sync.Mutex
	requests []string
}

func (f *orderLLM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []map[string]any `json:"messages"`
		Tools    []any            `json:"tools"`
	}
	if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.requests = append(f.requests, fmt.Sprint(req))
	f.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(delta map[string]any) {
		b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": delta}}})
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	var result string
	for _, m := range req.Messages {
		if m["role"] == "tool" {
			result, _ = m["content"].(string)
		}
	}
	switch {
	case result != "":
		send(map[string]any{"content": "Your order: " + result})
	case strings.Contains(fmt.Sprint(req.Tools), "lookup_order"):
		send(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": "call_1", "type": "function",
			"function": map[string]any{"name": "lookup_order", "arguments": `{"order_id":"A17"}`}}}})
	default:
		send(map[string]any{"content": "No tools here."})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// TestAgentsSDKHostedMCP: the OpenAI Agents SDK (@openai/agents-realtime 0.20.0, its Node WebSocket
// transport, unchanged) with a hostedMcpTool against the built binary: voiced lists the MCP server
// this test starts on loopback (the official Go SDK), runs the mind's call, with and without the
// SDK's approval, and the reply speaks the tool's result; every event passes the SDK's schemas.
func TestAgentsSDKHostedMCP(t *testing.T) {
	checkLeaks(t)
	needFlag(t, "mind-url", "mcp-allow-hosts")
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the Agents SDK test needs Node 20")
	}
	dir, _ := filepath.Abs("agents")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@openai", "agents-realtime", "package.json")); err != nil {
		t.Skip("tests/agents/node_modules is missing: run `npm ci` in tests/agents (make test does when npm is available)")
	}
	mcpSrv := mcptest.Start()
	defer mcpSrv.Close()
	llm := &orderLLM{}
	fake := httptest.NewServer(llm)
	defer fake.Close()
	s := startRealtime(t, serverOpts{Args: []string{"--mind-url", fake.URL + "/v1", "--mind-model", "fake-model",
		"--mcp-allow-hosts", mcpSrv.Host()}})

	for _, approval := range []string{"never", "always"} {
		t.Run(approval, func(t *testing.T) {
			before := len(mcpSrv.Calls())
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, "mcp.mjs")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "VOICED_WS_URL="+s.WSBase+"/v1/realtime?model=gpt-realtime", "VOICED_JWT="+s.jwt("agents-mcp", "acme"),
				"MCP_URL="+mcpSrv.URL, "MCP_APPROVAL="+approval)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("node: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
			}
			var r struct {
				Listed         []string `json:"listed"`
				Approvals      int      `json:"approvals"`
				Calls          []struct{ Name, Arguments, Output string }
				SchemaFailures []struct {
					Type   string `json:"type"`
					Issues any    `json:"issues"`
				} `json:"schemaFailures"`
				Types  []string `json:"types"`
				Errors []string `json:"errors"`
				Reply  string   `json:"reply"`
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
				t.Fatalf("node output %q: %v\nstderr:\n%s", out, err, stderr.String())
			}
			t.Logf("reply %q, approvals %d, calls %+v, %d events", r.Reply, r.Approvals, r.Calls, len(r.Types))
			if len(r.Errors) > 0 {
				t.Errorf("the SDK reported errors: %v", r.Errors)
			}
			if !slices.Equal(r.Listed, []string{"lookup_order"}) {
				t.Errorf("the SDK's available MCP tools %v, want [lookup_order]", r.Listed)
			}
			wantApprovals := 0
			if approval == "always" {
				wantApprovals = 1
			}
			if r.Approvals != wantApprovals {
				t.Errorf("approvals asked %d, want %d", r.Approvals, wantApprovals)
			}
			if len(r.Calls) != 1 || r.Calls[0].Name != "lookup_order" || r.Calls[0].Output != mcptest.OrderStatus("A17") {
				t.Errorf("the SDK's completed MCP calls %+v", r.Calls)
			}
			if got := mcpSrv.Calls()[before:]; !slices.Equal(got, []string{"lookup_order"}) {
				t.Errorf("the MCP server ran %v", got)
			}
			if !strings.Contains(r.Reply, mcptest.OrderStatus("A17")) {
				t.Errorf("the spoken reply %q does not say the tool's result; events %v", r.Reply, r.Types)
			}
			for _, want := range []string{"mcp_list_tools.in_progress", "mcp_list_tools.completed", "response.mcp_call_arguments.done",
				"response.mcp_call.in_progress", "response.mcp_call.completed", "response.output_audio.delta"} {
				if !slices.Contains(r.Types, want) {
					t.Errorf("no %s among the SDK's events", want)
				}
			}
			for _, f := range r.SchemaFailures {
				t.Errorf("%s fails the SDK's schema: %v", f.Type, f.Issues)
			}
		})
	}
	s.stop()
}
