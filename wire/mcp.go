package wire

// MCP tools (type "mcp" in tools), their items (mcp_list_tools, mcp_call, mcp_approval_request,
// mcp_approval_response) and their events, in the GA shapes of openai-node's realtime types and
// the Agents SDK's schemas (openaiRealtimeEvents.ts). Whether a server may be used is the
// session's decision (the operator's allow-list): the wire only reads and writes.

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Refusals of an MCP tool, by name: MCP off on this server (the operator allows no MCP host),
// or a server URL whose host the operator does not allow.
const (
	CodeMCPUnsupported      = "mcp_tools_unsupported"
	CodeMCPServerNotAllowed = "mcp_server_not_allowed"
)

// ErrMCPDisabled refuses a tool of type mcp where the operator allows no MCP host.
func ErrMCPDisabled(param, id string) *Error {
	return invalidRequest(CodeMCPUnsupported, param, id,
		"Invalid '%s': tools of type 'mcp' are not enabled on this server (its operator allows no MCP host); declare the MCP server's tools as function tools and run them in the client.", param)
}

// ErrMCPServerNotAllowed refuses a server URL the operator's allow-list does not hold.
func ErrMCPServerNotAllowed(param, id, why string) *Error {
	return invalidRequest(CodeMCPServerNotAllowed, param, id, "Invalid '%s': %s.", param, why)
}

// Approval modes of an MCP server's require_approval.
const (
	ApprovalAlways = "always" // every call waits for the client's mcp_approval_response
	ApprovalNever  = "never"
	ApprovalFilter = "filter" // {always:{tool_names}, never:{tool_names}}: the named, and the rest as always
)

// MCPApproval is require_approval.
type MCPApproval struct {
	Mode   string // ApprovalAlways (OpenAI's default), ApprovalNever or ApprovalFilter
	Always []string
	Never  []string
}

// Requires says whether a call of tool waits for approval.
func (a MCPApproval) Requires(tool string) bool {
	switch a.Mode {
	case ApprovalNever:
		return false
	case ApprovalFilter:
		if slices.Contains(a.Always, tool) {
			return true
		}
		return !slices.Contains(a.Never, tool)
	default:
		return true
	}
}

// MarshalJSON writes the mode's string or the filter object.
func (a MCPApproval) MarshalJSON() ([]byte, error) {
	if a.Mode != ApprovalFilter {
		mode := a.Mode
		if mode == "" {
			mode = ApprovalAlways
		}
		return json.Marshal(mode)
	}
	type names struct {
		ToolNames []string `json:"tool_names"`
	}
	out := map[string]names{}
	if a.Always != nil {
		out["always"] = names{a.Always}
	}
	if a.Never != nil {
		out["never"] = names{a.Never}
	}
	return json.Marshal(out)
}

// MCPServer is a tool of type "mcp": a remote MCP server whose tools the mind may call.
type MCPServer struct {
	Label       string
	URL         string
	Description string
	// Headers and Authorization go with every request to the server; never echoed.
	Headers       map[string]string
	Authorization string
	// AllowedTools, when not nil, are the only tools offered (allowed_tools: names, or
	// {tool_names}).
	AllowedTools []string
	Approval     MCPApproval
}

type mcpToolJSON struct {
	Type              string      `json:"type"`
	ServerLabel       string      `json:"server_label"`
	ServerURL         string      `json:"server_url"`
	ServerDescription string      `json:"server_description,omitempty"`
	AllowedTools      []string    `json:"allowed_tools,omitempty"`
	RequireApproval   MCPApproval `json:"require_approval"`
}

type functionToolJSON struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// MarshalJSON writes a function tool, or an MCP tool without its headers and authorization.
func (t Tool) MarshalJSON() ([]byte, error) {
	if t.MCP != nil {
		return json.Marshal(mcpToolJSON{"mcp", t.MCP.Label, t.MCP.URL, t.MCP.Description, t.MCP.AllowedTools, t.MCP.Approval})
	}
	return json.Marshal(functionToolJSON{t.Type, t.Name, t.Description, t.Parameters})
}

// MCPServers returns the MCP servers among tools.
func MCPServers(tools []Tool) []*MCPServer {
	var out []*MCPServer
	for _, t := range tools {
		if t.MCP != nil {
			out = append(out, t.MCP)
		}
	}
	return out
}

// Bounds of an MCP tool's fields.
const (
	MaxMCPURLBytes     = 2048
	MaxMCPHeaders      = 32
	MaxMCPHeaderBytes  = 8 << 10 // names and values together, per server
	MaxMCPToolNames    = 128
	MaxMCPServerLabels = 16
)

func parseMCPTool(raw json.RawMessage, p, id string) (Tool, *Error) {
	var in struct {
		ServerLabel       string            `json:"server_label"`
		ServerURL         string            `json:"server_url"`
		ServerDescription string            `json:"server_description"`
		ConnectorID       string            `json:"connector_id"`
		Authorization     string            `json:"authorization"`
		Headers           map[string]string `json:"headers"`
		AllowedTools      json.RawMessage   `json:"allowed_tools"`
		RequireApproval   json.RawMessage   `json:"require_approval"`
	}
	if err := unmarshalObject(raw, p, id, &in); err != nil {
		return Tool{}, err
	}
	if in.ConnectorID != "" {
		return Tool{}, invalidRequest(CodeMCPUnsupported, p+".connector_id", id,
			"Invalid '%s.connector_id': OpenAI's connectors are not served here; give the MCP server's server_url.", p)
	}
	if in.ServerLabel == "" {
		return Tool{}, ErrMissingParameter(p+".server_label", id)
	}
	if err := boundString(in.ServerLabel, p+".server_label", id, MaxNameBytes); err != nil {
		return Tool{}, err
	}
	if in.ServerURL == "" {
		return Tool{}, ErrMissingParameter(p+".server_url", id)
	}
	if err := boundString(in.ServerURL, p+".server_url", id, MaxMCPURLBytes); err != nil {
		return Tool{}, err
	}
	if err := boundString(in.ServerDescription, p+".server_description", id, MaxInstructionsBytes); err != nil {
		return Tool{}, err
	}
	if len(in.Headers) > MaxMCPHeaders {
		return Tool{}, invalidRequest(CodeStringTooLong, p+".headers", id, "Invalid '%s.headers': at most %d headers.", p, MaxMCPHeaders)
	}
	n := len(in.Authorization)
	for k, v := range in.Headers {
		n += len(k) + len(v)
	}
	if n > MaxMCPHeaderBytes {
		return Tool{}, invalidRequest(CodeStringTooLong, p+".headers", id, "Invalid '%s.headers': the headers and authorization are too long together (at most %d bytes).", p, MaxMCPHeaderBytes)
	}
	srv := &MCPServer{Label: in.ServerLabel, URL: in.ServerURL, Description: in.ServerDescription,
		Headers: in.Headers, Authorization: in.Authorization, Approval: MCPApproval{Mode: ApprovalAlways}}
	if len(in.AllowedTools) > 0 && !isNull(in.AllowedTools) {
		names, err := parseToolNames(in.AllowedTools, p+".allowed_tools", id, true)
		if err != nil {
			return Tool{}, err
		}
		srv.AllowedTools = names
	}
	if len(in.RequireApproval) > 0 && !isNull(in.RequireApproval) {
		a, err := parseApproval(in.RequireApproval, p+".require_approval", id)
		if err != nil {
			return Tool{}, err
		}
		srv.Approval = a
	}
	return Tool{Type: "mcp", MCP: srv}, nil
}

// parseToolNames reads ["a","b"] or (when objectToo) {tool_names:["a","b"]}.
func parseToolNames(raw json.RawMessage, p, id string, arrayToo bool) ([]string, *Error) {
	if rawKind(raw) == "an object" {
		var in struct {
			ToolNames []string `json:"tool_names"`
			ReadOnly  *bool    `json:"read_only"`
		}
		if err := unmarshalObject(raw, p, id, &in); err != nil {
			return nil, err
		}
		raw, _ = json.Marshal(in.ToolNames)
		p += ".tool_names"
		if in.ToolNames == nil {
			return []string{}, nil
		}
	} else if !arrayToo {
		return nil, invalidType(p, "an object", raw, id)
	}
	var names []string
	if json.Unmarshal(raw, &names) != nil {
		return nil, invalidType(p, "an array of strings", raw, id)
	}
	if len(names) > MaxMCPToolNames {
		return nil, ErrArrayTooLong(p, id, MaxMCPToolNames, len(names))
	}
	for i, s := range names {
		if err := boundString(s, fmt.Sprintf("%s[%d]", p, i), id, MaxNameBytes); err != nil {
			return nil, err
		}
	}
	if names == nil {
		names = []string{}
	}
	return names, nil
}

func parseApproval(raw json.RawMessage, p, id string) (MCPApproval, *Error) {
	if rawKind(raw) == "a string" {
		s, _ := parseString(raw, p, id)
		if err := oneOf(p, id, s, ApprovalAlways, ApprovalNever); err != nil {
			return MCPApproval{}, err
		}
		return MCPApproval{Mode: s}, nil
	}
	m, err := asObject(raw, p, id)
	if err != nil {
		return MCPApproval{}, invalidType(p, "'always', 'never' or an object", raw, id)
	}
	a := MCPApproval{Mode: ApprovalFilter}
	for k, v := range m {
		switch k {
		case "always":
			if a.Always, err = parseToolNames(v, p+".always", id, false); err != nil {
				return MCPApproval{}, err
			}
		case "never":
			if a.Never, err = parseToolNames(v, p+".never", id, false); err != nil {
				return MCPApproval{}, err
			}
		default:
			return MCPApproval{}, ErrUnknownParameter(p+"."+k, id)
		}
	}
	return a, nil
}

// MCP item types.
const (
	ItemMCPListTools        ItemType = "mcp_list_tools"
	ItemMCPCall             ItemType = "mcp_call"
	ItemMCPApprovalRequest  ItemType = "mcp_approval_request"
	ItemMCPApprovalResponse ItemType = "mcp_approval_response"
)

// MCPToolInfo is one tool of an mcp_list_tools item.
type MCPToolInfo struct {
	Name        string          `json:"name"`
	Description string          `json:"description"` // always written: the Agents SDK requires it
	InputSchema json.RawMessage `json:"input_schema"`
	Annotations json.RawMessage `json:"annotations"`
}

// MCPError is an mcp_call's error: Type "protocol_error" (with Code), "tool_execution_error",
// or "http_error" (with Code, 0 when no status).
type MCPError struct {
	Type    string `json:"type"`
	Code    *int   `json:"code,omitempty"`
	Message string `json:"message"`
}

// MCPItem holds the fields of the MCP item types; an Item carries it (Item.MCP) for those types.
// Treat it as immutable once an item is shared: replace it to change it.
type MCPItem struct {
	ServerLabel       string
	Tools             []MCPToolInfo // mcp_list_tools
	ApprovalRequestID string        // mcp_call (the approval that allowed it), mcp_approval_response
	Approve           bool          // mcp_approval_response
	Reason            string        // mcp_approval_response (optional)
	Output            *string       // mcp_call: nil until it returned (written as null)
	Error             *MCPError     // mcp_call: nil unless it failed
}

type mcpListToolsJSON struct {
	ID          string        `json:"id,omitempty"`
	Object      string        `json:"object"`
	Type        ItemType      `json:"type"`
	Status      ItemStatus    `json:"status,omitempty"`
	ServerLabel string        `json:"server_label"`
	Tools       []MCPToolInfo `json:"tools"`
}

type mcpCallJSON struct {
	ID                string     `json:"id,omitempty"`
	Object            string     `json:"object"`
	Type              ItemType   `json:"type"`
	Status            ItemStatus `json:"status,omitempty"`
	ServerLabel       string     `json:"server_label"`
	Name              string     `json:"name"`
	Arguments         string     `json:"arguments"`
	ApprovalRequestID *string    `json:"approval_request_id"`
	Output            *string    `json:"output"`
	Error             *MCPError  `json:"error"`
}

type mcpApprovalRequestJSON struct {
	ID          string     `json:"id,omitempty"`
	Object      string     `json:"object"`
	Type        ItemType   `json:"type"`
	Status      ItemStatus `json:"status,omitempty"`
	ServerLabel string     `json:"server_label"`
	Name        string     `json:"name"`
	Arguments   string     `json:"arguments"`
}

type mcpApprovalResponseJSON struct {
	ID                string     `json:"id,omitempty"`
	Object            string     `json:"object"`
	Type              ItemType   `json:"type"`
	Status            ItemStatus `json:"status,omitempty"`
	ApprovalRequestID string     `json:"approval_request_id"`
	Approve           bool       `json:"approve"`
	Reason            *string    `json:"reason"`
}

// mcpWire renders an MCP item; ok false for other types.
func (it Item) mcpWire() (any, bool) {
	m := it.MCP
	if m == nil {
		m = &MCPItem{}
	}
	switch it.Type {
	case ItemMCPListTools:
		tools := m.Tools
		if tools == nil {
			tools = []MCPToolInfo{}
		}
		return mcpListToolsJSON{it.ID, "realtime.item", it.Type, it.Status, m.ServerLabel, tools}, true
	case ItemMCPCall:
		return mcpCallJSON{it.ID, "realtime.item", it.Type, it.Status, m.ServerLabel, it.Name, it.Arguments,
			nullable(m.ApprovalRequestID), m.Output, m.Error}, true
	case ItemMCPApprovalRequest:
		return mcpApprovalRequestJSON{it.ID, "realtime.item", it.Type, it.Status, m.ServerLabel, it.Name, it.Arguments}, true
	case ItemMCPApprovalResponse:
		return mcpApprovalResponseJSON{it.ID, "realtime.item", it.Type, it.Status, m.ApprovalRequestID, m.Approve, nullable(m.Reason)}, true
	}
	return nil, false
}

// MCPListToolsInProgress: voiced is listing a server's tools (the item is in the conversation).
type MCPListToolsInProgress struct {
	ItemID string `json:"item_id"`
}

func (MCPListToolsInProgress) EventName(Dialect) string { return "mcp_list_tools.in_progress" }
func (ev MCPListToolsInProgress) body(Dialect) any      { return ev }

// MCPListToolsCompleted: the item lists the server's tools.
type MCPListToolsCompleted struct {
	ItemID string `json:"item_id"`
}

func (MCPListToolsCompleted) EventName(Dialect) string { return "mcp_list_tools.completed" }
func (ev MCPListToolsCompleted) body(Dialect) any      { return ev }

// MCPListToolsFailed: the server could not be listed (an error event says why).
type MCPListToolsFailed struct {
	ItemID string `json:"item_id"`
}

func (MCPListToolsFailed) EventName(Dialect) string { return "mcp_list_tools.failed" }
func (ev MCPListToolsFailed) body(Dialect) any      { return ev }

// ResponseMCPCallArgumentsDelta streams an mcp_call's arguments.
type ResponseMCPCallArgumentsDelta struct {
	ResponseID  string `json:"response_id"`
	ItemID      string `json:"item_id"`
	OutputIndex int    `json:"output_index"`
	Delta       string `json:"delta"`
	// Obfuscation pads OpenAI's deltas against length side channels; the Agents SDK's schema
	// requires the field, and voiced sends it empty.
	Obfuscation string `json:"obfuscation"`
}

func (ResponseMCPCallArgumentsDelta) EventName(Dialect) string {
	return "response.mcp_call_arguments.delta"
}
func (ev ResponseMCPCallArgumentsDelta) body(Dialect) any { return ev }

// ResponseMCPCallArgumentsDone: the arguments are complete.
type ResponseMCPCallArgumentsDone struct {
	ResponseID  string `json:"response_id"`
	ItemID      string `json:"item_id"`
	OutputIndex int    `json:"output_index"`
	Arguments   string `json:"arguments"`
}

func (ResponseMCPCallArgumentsDone) EventName(Dialect) string {
	return "response.mcp_call_arguments.done"
}
func (ev ResponseMCPCallArgumentsDone) body(Dialect) any { return ev }

// ResponseMCPCallInProgress, ResponseMCPCallCompleted, ResponseMCPCallFailed: the call's run.
type ResponseMCPCallInProgress struct {
	ItemID      string `json:"item_id"`
	OutputIndex int    `json:"output_index"`
}

func (ResponseMCPCallInProgress) EventName(Dialect) string { return "response.mcp_call.in_progress" }
func (ev ResponseMCPCallInProgress) body(Dialect) any      { return ev }

// ResponseMCPCallCompleted: the call returned its output.
type ResponseMCPCallCompleted struct {
	ItemID      string `json:"item_id"`
	OutputIndex int    `json:"output_index"`
}

func (ResponseMCPCallCompleted) EventName(Dialect) string { return "response.mcp_call.completed" }
func (ev ResponseMCPCallCompleted) body(Dialect) any      { return ev }

// ResponseMCPCallFailed: the call failed (the item's error says how).
type ResponseMCPCallFailed struct {
	ItemID      string `json:"item_id"`
	OutputIndex int    `json:"output_index"`
}

func (ResponseMCPCallFailed) EventName(Dialect) string { return "response.mcp_call.failed" }
func (ev ResponseMCPCallFailed) body(Dialect) any      { return ev }
