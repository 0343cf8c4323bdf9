package session

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voiced/voiced/internal/mcptest"
	"github.com/voiced/voiced/internal/testkit"
	"github.com/voiced/voiced/mcptool"
	"github.com/voiced/voiced/mind"
)

// toolMind stands in for an OpenAI-compatible model that uses tools: offered lookup_order, it
// calls it (order A17); handed a tool's result, it says "Here it is: <result>".
type toolMind struct {
	bodies chan map[string]any
}

func newToolMind(t *testing.T) (*toolMind, mind.Mind) {
	t.Helper()
	tm := &toolMind{bodies: make(chan map[string]any, 16)}
	srv := httptest.NewServer(tm)
	t.Cleanup(srv.Close)
	m, err := mind.NewOpenAI(mind.OpenAIConfig{URL: srv.URL + "/v1", Model: "stand-in", Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return tm, m
}

func (tm *toolMind) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	raw := map[string]any{}
	dec := json.NewDecoder(r.Body)
	var b json.RawMessage
	if err := dec.Decode(&b); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	json.Unmarshal(b, &body)
	json.Unmarshal(b, &raw)
	tm.bodies <- raw
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(delta map[string]any) {
		b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": delta}}})
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	last := body.Messages[len(body.Messages)-1]
	offered := slices.ContainsFunc(body.Tools, func(t struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}) bool {
		return t.Function.Name == "lookup_order"
	})
	switch {
	case last.Role == "tool":
		chunk(map[string]any{"content": "Here it is: " + fmt.Sprint(last.Content)})
	case offered:
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": "call_1", "type": "function",
			"function": map[string]any{"name": "lookup_order", "arguments": `{"order_`}}}})
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": `id":"A17"}`}}}})
	default:
		chunk(map[string]any{"content": "I have no tools."})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func (tm *toolMind) body(t *testing.T) map[string]any {
	t.Helper()
	select {
	case b := <-tm.bodies:
		return b
	case <-time.After(10 * time.Second):
		t.Fatal("the mind was not asked within 10 s")
		return nil
	}
}

func mcpClientFor(t *testing.T, srv *mcptest.Server) *mcptool.Client {
	t.Helper()
	c, err := mcptool.New(mcptool.Config{AllowHosts: []string{srv.Host()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdle)
	return c
}

func mcpUpdate(url string, approval any) map[string]any {
	return map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime", "output_modalities": []string{"text"},
		"tools": []any{map[string]any{"type": "mcp", "server_label": "orders", "server_url": url, "authorization": "tok-9",
			"allowed_tools": []string{"lookup_order", "fail"}, "require_approval": approval}}}}
}

// listed reads the session's update to its mcp_list_tools item's conversation.item.done and
// returns the events.
func listed(t *testing.T, c *client) []map[string]any {
	t.Helper()
	evs := c.until("mcp_list_tools.completed")
	evs = append(evs, c.expect("conversation.item.done")...)
	want := []string{"session.updated", "conversation.item.added", "mcp_list_tools.in_progress", "mcp_list_tools.completed", "conversation.item.done"}
	if got := types(evs); !slices.Equal(got, want) {
		t.Fatalf("listing events %v, want %v", got, want)
	}
	item := evs[4]["item"].(map[string]any)
	var names []string
	for _, tl := range item["tools"].([]any) {
		names = append(names, tl.(map[string]any)["name"].(string))
	}
	if item["type"] != "mcp_list_tools" || item["server_label"] != "orders" || strings.Join(names, ",") != "fail,lookup_order" {
		t.Fatalf("mcp_list_tools item %v (allowed_tools keeps fail and lookup_order)", item)
	}
	return evs
}

func outputOf(done map[string]any, typ string) map[string]any {
	for _, o := range done["response"].(map[string]any)["output"].([]any) {
		if o.(map[string]any)["type"] == typ {
			return o.(map[string]any)
		}
	}
	return nil
}

// A session's MCP server is listed, its tools offered to the mind as functions, the mind's call
// run by voiced (mcp_call with its events and output), and the next response speaks the result.
func TestMCPToolCallRuns(t *testing.T) {
	testkit.CheckLeaks(t)
	srv := mcptest.Start()
	defer srv.Close()
	tm, m := newToolMind(t)
	ts := newTestServer(t, Config{Engines: Engines{Mind: m}, MCP: mcpClientFor(t, srv)})
	c := ts.open(t)
	c.send(mcpUpdate(srv.URL, "never"))
	listed(t, c)

	c.send(userText("Where is my order A17?"))
	c.until("conversation.item.done")
	c.send(map[string]any{"type": "response.create"})
	b := tm.body(t)
	if !strings.Contains(fmt.Sprint(b["tools"]), "lookup_order") {
		t.Fatalf("the mind was not offered the MCP tool: %v", b["tools"])
	}
	evs := c.until("response.done")
	for _, want := range []string{"response.mcp_call_arguments.delta", "response.mcp_call_arguments.done", "response.mcp_call.in_progress", "response.mcp_call.completed"} {
		if !slices.Contains(types(evs), want) {
			t.Errorf("no %s in %v", want, types(evs))
		}
	}
	if slices.Contains(types(evs), "response.function_call_arguments.done") {
		t.Errorf("an MCP call was reported as a function call: %v", types(evs))
	}
	call := outputOf(evs[len(evs)-1], "mcp_call")
	if call == nil || call["name"] != "lookup_order" || call["arguments"] != `{"order_id":"A17"}` || call["output"] != mcptest.OrderStatus("A17") || call["server_label"] != "orders" {
		t.Fatalf("mcp_call %v", call)
	}
	if got := srv.Calls(); !slices.Equal(got, []string{"lookup_order"}) {
		t.Errorf("the MCP server ran %v", got)
	}
	for _, h := range srv.Headers() {
		if h.Get("Authorization") != "Bearer tok-9" {
			t.Fatalf("a request to the MCP server without the tool's authorization: %v", h)
		}
	}

	// The client's next response.create (the Agents SDK sends it on the call's item.done): the
	// mind reads the call and its output and says it.
	c.send(map[string]any{"type": "response.create"})
	b = tm.body(t)
	if !strings.Contains(fmt.Sprint(b["messages"]), mcptest.OrderStatus("A17")) {
		t.Errorf("the mind was not handed the call's output: %v", b["messages"])
	}
	evs = c.until("response.done")
	msg := outputOf(evs[len(evs)-1], "message")
	if msg == nil || !strings.Contains(fmt.Sprint(msg["content"]), "Zanzibar") {
		t.Errorf("the reply does not say the tool's result: %v", msg)
	}
	c.conn.Close(websocket.StatusNormalClosure, "")
}

// require_approval "always": the call waits as an mcp_approval_request; the client's approval
// starts a response that runs it; a refusal runs nothing and the mind reads the refusal.
func TestMCPApproval(t *testing.T) {
	testkit.CheckLeaks(t)
	srv := mcptest.Start()
	defer srv.Close()
	tm, m := newToolMind(t)
	ts := newTestServer(t, Config{Engines: Engines{Mind: m}, MCP: mcpClientFor(t, srv)})
	c := ts.open(t)
	c.send(mcpUpdate(srv.URL, "always"))
	listed(t, c)

	ask := func() string {
		c.send(userText("Where is my order A17?"))
		c.until("conversation.item.done")
		c.send(map[string]any{"type": "response.create"})
		tm.body(t)
		evs := c.until("response.done")
		req := outputOf(evs[len(evs)-1], "mcp_approval_request")
		if req == nil || req["name"] != "lookup_order" || req["arguments"] != `{"order_id":"A17"}` || req["server_label"] != "orders" {
			t.Fatalf("no mcp_approval_request in %v", evs[len(evs)-1])
		}
		if slices.Contains(types(evs), "response.mcp_call.in_progress") {
			t.Fatalf("the call ran before its approval: %v", types(evs))
		}
		return req["id"].(string)
	}
	id := ask()
	if len(srv.Calls()) != 0 {
		t.Fatalf("the MCP server ran %v before approval", srv.Calls())
	}
	c.send(map[string]any{"type": "conversation.item.create", "previous_item_id": id,
		"item": map[string]any{"type": "mcp_approval_response", "approval_request_id": id, "approve": true}})
	evs := c.until("response.done")
	call := outputOf(evs[len(evs)-1], "mcp_call")
	if call == nil || call["approval_request_id"] != id || call["output"] != mcptest.OrderStatus("A17") {
		t.Fatalf("approved: mcp_call %v", call)
	}
	if got := srv.Calls(); !slices.Equal(got, []string{"lookup_order"}) {
		t.Errorf("the MCP server ran %v", got)
	}

	id = ask()
	c.send(map[string]any{"type": "conversation.item.create", "previous_item_id": id,
		"item": map[string]any{"type": "mcp_approval_response", "approval_request_id": id, "approve": false, "reason": "not now"}})
	c.expect("conversation.item.added", "conversation.item.done")
	c.send(map[string]any{"type": "response.create"})
	b := tm.body(t)
	if !strings.Contains(fmt.Sprint(b["messages"]), "The user declined this call. Reason: not now") {
		t.Errorf("the mind was not told of the refusal: %v", b["messages"])
	}
	c.until("response.done")
	if got := srv.Calls(); len(got) != 1 {
		t.Errorf("a refused call ran: %v", got)
	}
	c.send(map[string]any{"type": "conversation.item.create",
		"item": map[string]any{"type": "mcp_approval_response", "approval_request_id": "item_nope", "approve": true}})
	c.expectError(codeMCPApprovalGone)
	c.conn.Close(websocket.StatusNormalClosure, "")
}

// MCP tools are refused by name where the operator allows no MCP host, or not the URL's host;
// the update is refused whole (its instructions with it), as any refusal is.
func TestMCPRefusedByOperator(t *testing.T) {
	testkit.CheckLeaks(t)
	other, err := mcptool.New(mcptool.Config{AllowHosts: []string{"mcp.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		client *mcptool.Client
		code   string
	}{
		"off":         {nil, "mcp_tools_unsupported"},
		"other hosts": {other, "mcp_server_not_allowed"},
	} {
		t.Run(name, func(t *testing.T) {
			ts := newTestServer(t, Config{MCP: tc.client})
			c := ts.open(t)
			c.send(mcpUpdate("http://127.0.0.1:1/mcp", "never"))
			e := c.expectError(tc.code)
			if !strings.HasPrefix(fmt.Sprint(e["param"]), "session.tools[0]") {
				t.Errorf("param %v", e["param"])
			}
			c.send(map[string]any{"type": "response.create", "response": map[string]any{"tools": []any{map[string]any{"type": "mcp", "server_label": "x", "server_url": "https://mcp.example.com/mcp"}}}})
			c.expectError("mcp_tools_unsupported")
			c.conn.Close(websocket.StatusNormalClosure, "")
		})
	}
}

// A response.create arriving while a reply with MCP items sends its last events (the Agents SDK
// sends it on the mcp_call's conversation.item.done, before response.done) waits for that reply
// instead of being refused; before that point it is refused as any second response is.
func TestResponseAfterMCPItemsWaits(t *testing.T) {
	var rs replies
	first := &reply{id: "resp_1", done: make(chan struct{})}
	if we := rs.admit(first, ""); we != nil {
		t.Fatal(we)
	}
	if we := rs.admit(&reply{id: "resp_2", done: make(chan struct{})}, "e1"); we == nil {
		t.Fatal("a second response was admitted while the first was running")
	}
	rs.ending(first)
	second := &reply{id: "resp_3", done: make(chan struct{})}
	if we := rs.admit(second, "e2"); we != nil {
		t.Fatalf("refused while the first was ending: %v", we)
	}
	if second.prev != first.done {
		t.Error("the second response does not wait for the first's last events")
	}
}
