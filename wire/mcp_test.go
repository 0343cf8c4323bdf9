package wire

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// An MCP tool is read whole (the Agents SDK's shape: hostedMcpTool through session.update), its
// secrets kept and never echoed; a malformed one is refused by the field's name.
func TestMCPToolDecode(t *testing.T) {
	t.Parallel()
	raw := `{"type":"session.update","session":{"type":"realtime","tools":[{"type":"function","name":"f"},` +
		`{"type":"mcp","server_label":"orders","server_url":"http://127.0.0.1:9/mcp","authorization":"tok","headers":{"X-Key":"k"},` +
		`"allowed_tools":["lookup_order"],"require_approval":{"never":{"tool_names":["lookup_order"]}}}]}}`
	ev, err := Decode([]byte(raw), GA)
	if err != nil {
		t.Fatal(err)
	}
	tools := ev.(*SessionUpdate).Session.Tools.Value
	if len(tools) != 2 || tools[1].MCP == nil {
		t.Fatalf("tools %+v", tools)
	}
	m := tools[1].MCP
	if m.Label != "orders" || m.Authorization != "tok" || m.Headers["X-Key"] != "k" || strings.Join(m.AllowedTools, ",") != "lookup_order" {
		t.Errorf("server %+v", m)
	}
	if m.Approval.Requires("lookup_order") || !m.Approval.Requires("other") {
		t.Errorf("approval %+v: never for lookup_order, always for the rest", m.Approval)
	}
	echo, _ := json.Marshal(tools[1])
	if strings.Contains(string(echo), "tok") || strings.Contains(string(echo), "X-Key") ||
		!strings.Contains(string(echo), `"require_approval":{"never":{"tool_names":["lookup_order"]}}`) {
		t.Errorf("echo %s", echo)
	}
	for raw, param := range map[string]string{
		`{"type":"mcp","server_url":"http://x/mcp"}`:                                         "session.tools[0].server_label",
		`{"type":"mcp","server_label":"a"}`:                                                  "session.tools[0].server_url",
		`{"type":"mcp","server_label":"a","server_url":"u","require_approval":"sometimes"}`:  "session.tools[0].require_approval",
		`{"type":"mcp","server_label":"a","server_url":"u","require_approval":{"maybe":{}}}`: "session.tools[0].require_approval.maybe",
		`{"type":"mcp","server_label":"a","server_url":"u","allowed_tools":"x"}`:             "session.tools[0].allowed_tools",
		`{"type":"mcp","server_label":"a","connector_id":"connector_gmail"}`:                 "session.tools[0].connector_id",
	} {
		_, err := Decode([]byte(`{"type":"session.update","session":{"type":"realtime","tools":[`+raw+`]}}`), GA)
		var we *Error
		if !errors.As(err, &we) || we.Param != param {
			t.Errorf("%s: got %v, want param %s", raw, err, param)
		}
	}
	two := `{"type":"mcp","server_label":"a","server_url":"u"}`
	if _, err := Decode([]byte(`{"type":"session.update","session":{"type":"realtime","tools":[`+two+`,`+two+`]}}`), GA); err == nil {
		t.Error("two servers with one label were accepted")
	}
}

// The client's approval answer is an item; MCP items and events are written in the clients' shapes.
func TestMCPItemsAndEvents(t *testing.T) {
	t.Parallel()
	ev, err := Decode([]byte(`{"type":"conversation.item.create","previous_item_id":"item_r","item":{"type":"mcp_approval_response","approval_request_id":"item_r","approve":true}}`), GA)
	if err != nil {
		t.Fatal(err)
	}
	it := ev.(*ConversationItemCreate).Item
	if it.Type != ItemMCPApprovalResponse || it.MCP == nil || it.MCP.ApprovalRequestID != "item_r" || !it.MCP.Approve {
		t.Fatalf("item %+v", it)
	}
	if _, err := Decode([]byte(`{"type":"conversation.item.create","item":{"type":"mcp_approval_response","approve":true}}`), GA); err == nil {
		t.Error("an approval without approval_request_id was accepted")
	}
	enc := NewEncoder(GA)
	out := func(ev ServerEvent) string {
		b, err := enc.Encode(ev)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	call := Item{ID: "item_c", Type: ItemMCPCall, Status: ItemInProgress, Name: "lookup_order", Arguments: "", MCP: &MCPItem{ServerLabel: "orders"}}
	got := out(ConversationItemAdded{Item: call})
	for _, want := range []string{`"type":"mcp_call"`, `"server_label":"orders"`, `"arguments":""`, `"output":null`, `"error":null`, `"approval_request_id":null`} {
		if !strings.Contains(got, want) {
			t.Errorf("mcp_call %s lacks %s", got, want)
		}
	}
	list := Item{ID: "item_l", Type: ItemMCPListTools, Status: ItemCompleted, MCP: &MCPItem{ServerLabel: "orders",
		Tools: []MCPToolInfo{{Name: "lookup_order", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: json.RawMessage("null")}}}}
	if got := out(ConversationItemDone{Item: list}); !strings.Contains(got, `"tools":[{"name":"lookup_order","description":"","input_schema":{"type":"object"},"annotations":null}]`) {
		t.Errorf("mcp_list_tools %s", got)
	}
	if got := out(ResponseMCPCallArgumentsDelta{ResponseID: "r", ItemID: "i", Delta: "{"}); !strings.Contains(got, `"type":"response.mcp_call_arguments.delta"`) || !strings.Contains(got, `"obfuscation":""`) {
		t.Errorf("delta %s", got)
	}
	if got := out(MCPListToolsFailed{ItemID: "i"}); !strings.Contains(got, `"type":"mcp_list_tools.failed"`) {
		t.Errorf("failed %s", got)
	}
}
