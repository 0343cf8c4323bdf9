package session

// MCP tools served by voiced (tools of type "mcp" in session.update): each server is listed once
// when the session names it (an mcp_list_tools item), its tools are offered to the mind as
// functions, and the calls the mind makes are run here (mcp_call items), or, where
// require_approval says so, wait as an mcp_approval_request item for the client's
// mcp_approval_response, which starts a response that runs the call.
//
// As OpenAI's does, a response that ran an MCP call ends with it: the client's next
// response.create speaks the result (the Agents SDK sends it on the call's conversation.item.done,
// automaticallyTriggerResponseForMcpToolCalls). A response.create that arrives while that
// response is sending its last events waits for them instead of being refused.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/voiced/voiced/mcptool"
	"github.com/voiced/voiced/mind"
	"github.com/voiced/voiced/wire"
)

// Codes of MCP failures reported in error events.
const (
	codeMCPListFailed   = "mcp_list_tools_failed"
	codeMCPApprovalGone = "mcp_approval_request_not_found"
)

// mcpState is a conversation's MCP servers and the calls waiting for approval. Its maps are under
// mu; a server's listing fields are written by its lister before ready closes, read after.
type mcpState struct {
	client *mcptool.Client // Config.MCP (nil or disabled: MCP tools are refused)

	mu      sync.Mutex
	servers map[string]*mcpServer  // by server_label: the session's current servers
	pending map[string]*mcpPending // by mcp_approval_request item id
}

// mcpServer is one server of the session.
type mcpServer struct {
	cfg   wire.MCPServer
	ready chan struct{} // closed when its listing ended; then sess, tools and err are fixed
	sess  *mcptool.Session
	tools []mcptool.Tool
	err   error
}

// mcpTarget is where a tool the mind may call is run.
type mcpTarget struct {
	server *mcpServer
}

// mcpPending is a call waiting for the client's approval.
type mcpPending struct {
	server          *mcpServer
	requestID, name string
	arguments       string
}

// checkMCPTools refuses, by name, MCP tools this server may not use: MCP off, or a URL whose host
// is not on the operator's allow-list. inResponse: response.create's tools, where MCP servers are
// not taken (they are listed once, for the session).
func (m *mcpState) checkMCPTools(tools []wire.Tool, param, eventID string, inResponse bool) *wire.Error {
	for i, t := range tools {
		if t.MCP == nil {
			continue
		}
		p := fmt.Sprintf("%s[%d]", param, i)
		if !m.client.Enabled() {
			return wire.ErrMCPDisabled(p, eventID)
		}
		if inResponse {
			return &wire.Error{Type: wire.TypeInvalidRequest, Code: wire.CodeMCPUnsupported, Param: p, EventID: eventID,
				Message: fmt.Sprintf("Invalid '%s': MCP servers are declared in session.update (voiced lists them once for the session), not in response.create.", p)}
		}
		if _, err := m.client.Check(t.MCP.URL); err != nil {
			why := "the server URL must be an absolute http(s) URL"
			if errors.Is(err, mcptool.ErrHostNotAllowed) {
				why = "this server's operator does not allow MCP servers on that host"
			}
			return wire.ErrMCPServerNotAllowed(p+".server_url", eventID, why)
		}
	}
	return nil
}

// syncMCP brings the conversation's servers to the session's: a server new or changed is listed
// (an mcp_list_tools item, on a worker), one gone or changed is closed once its listing ended (a
// call still waiting for its approval then fails). On the input goroutine, after session.updated.
func (c *conversation) syncMCP(tools []wire.Tool) {
	m := &c.mcp
	want := wire.MCPServers(tools)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.servers == nil && len(want) == 0 {
		return
	}
	next := map[string]*mcpServer{}
	var start []*mcpServer
	for _, w := range want {
		if s := m.servers[w.Label]; s != nil && reflect.DeepEqual(s.cfg, *w) {
			next[w.Label] = s
			continue
		}
		s := &mcpServer{cfg: *w, ready: make(chan struct{})}
		next[w.Label] = s
		start = append(start, s)
	}
	for label, s := range m.servers {
		if next[label] != s {
			c.work.Go(func() {
				<-s.ready // its lister is a worker too: it ends within the connect timeout
				if s.sess != nil {
					s.sess.Close()
				}
			})
		}
	}
	m.servers = next
	for _, s := range start {
		e := &entry{item: wire.Item{ID: wire.NewID("item_"), Type: wire.ItemMCPListTools, Status: wire.ItemInProgress,
			MCP: &wire.MCPItem{ServerLabel: s.cfg.Label}}}
		prev := c.hist.add(e, "")
		c.send(wire.ConversationItemAdded{PreviousItemID: prev, Item: cloneItem(e.item)})
		c.send(wire.MCPListToolsInProgress{ItemID: e.item.ID})
		c.work.Go(func() { c.listMCP(s, e) })
	}
}

// listMCP connects to a server and lists its tools into its mcp_list_tools item (a worker).
func (c *conversation) listMCP(s *mcpServer, e *entry) {
	sess, tools, err := c.mcp.open(c.ctx, s.cfg)
	s.sess, s.tools, s.err = sess, tools, err
	close(s.ready)
	if c.ctx.Err() != nil {
		return
	}
	info := make([]wire.MCPToolInfo, 0, len(tools))
	for _, t := range tools {
		info = append(info, wire.MCPToolInfo{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema, Annotations: t.Annotations})
	}
	status := wire.ItemCompleted
	if err != nil {
		status = wire.ItemIncomplete
		c.log.Warn("mcp server not listed", "server_label", s.cfg.Label, "err", err)
	}
	c.hist.edit(e, func(it *wire.Item) {
		it.Status = status
		it.MCP = &wire.MCPItem{ServerLabel: s.cfg.Label, Tools: info}
	})
	it, _ := c.hist.itemCopy(e.item.ID)
	if err != nil {
		c.send(wire.MCPListToolsFailed{ItemID: e.item.ID})
		c.send(&wire.Error{Type: wire.TypeServer, Code: codeMCPListFailed, Param: "session.tools",
			Message: fmt.Sprintf("The MCP server '%s' could not be listed: %s.", s.cfg.Label, mcpFailureText(err))})
	} else {
		c.send(wire.MCPListToolsCompleted{ItemID: e.item.ID})
	}
	if it.ID != "" { // still in the conversation
		c.send(wire.ConversationItemDone{PreviousItemID: c.hist.previousOf(it.ID), Item: it})
	}
}

// mcpFailureText says why a listing failed, safe to show the client that named the server.
func mcpFailureText(err error) string {
	switch {
	case errors.Is(err, mcptool.ErrTooManyTools):
		return err.Error()
	case errors.Is(err, mcptool.ErrRedirect):
		return "it answered with a redirect, which voiced does not follow"
	case errors.Is(err, mcptool.ErrHostNotAllowed), errors.Is(err, mcptool.ErrDisabled):
		return "its host is not allowed"
	case errors.Is(err, context.DeadlineExceeded):
		return "it did not answer in time"
	}
	return "it could not be reached, or did not answer as an MCP server (streamable HTTP)"
}

// open connects to a server and lists the tools its allowed_tools keep.
func (m *mcpState) open(ctx context.Context, cfg wire.MCPServer) (*mcptool.Session, []mcptool.Tool, error) {
	headers := http.Header{}
	for k, v := range cfg.Headers {
		headers.Set(k, v)
	}
	if cfg.Authorization != "" {
		auth := cfg.Authorization
		if !strings.HasPrefix(strings.ToLower(auth), "bearer ") {
			auth = "Bearer " + auth
		}
		headers.Set("Authorization", auth)
	}
	sess, err := m.client.Connect(ctx, mcptool.Server{URL: cfg.URL, Headers: headers})
	if err != nil {
		return nil, nil, err
	}
	var keep func(string) bool
	if cfg.AllowedTools != nil {
		keep = func(name string) bool { return slices.Contains(cfg.AllowedTools, name) }
	}
	tools, err := sess.ListTools(ctx, keep)
	if err != nil {
		sess.Close()
		return nil, nil, err
	}
	return sess, tools, nil
}

// offer waits for the listing of the servers cfg names and returns their tools as the mind's
// functions (a name a function tool or an earlier server has is not offered twice) and where each
// runs. A server that failed to list offers nothing.
func (m *mcpState) offer(ctx context.Context, cfg wire.Session) ([]mind.Tool, map[string]mcpTarget, error) {
	if cfg.ToolChoice.Mode == wire.ToolChoiceNone {
		return nil, nil, nil
	}
	labels := wire.MCPServers(cfg.Tools)
	if len(labels) == 0 {
		return nil, nil, nil
	}
	m.mu.Lock()
	servers := make([]*mcpServer, 0, len(labels))
	for _, w := range labels {
		if s := m.servers[w.Label]; s != nil {
			servers = append(servers, s)
		}
	}
	m.mu.Unlock()
	taken := map[string]bool{}
	for _, t := range cfg.Tools {
		if t.MCP == nil {
			taken[t.Name] = true
		}
	}
	var tools []mind.Tool
	routes := map[string]mcpTarget{}
	for _, s := range servers {
		select {
		case <-s.ready:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
		if s.err != nil {
			continue
		}
		for _, t := range s.tools {
			if taken[t.Name] {
				continue
			}
			taken[t.Name] = true
			tools = append(tools, mind.Tool{Name: t.Name, Description: t.Description, Parameters: t.InputSchema})
			routes[t.Name] = mcpTarget{server: s}
		}
	}
	return tools, routes, nil
}

// await records a call waiting for approval.
func (m *mcpState) await(p *mcpPending) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pending == nil {
		m.pending = map[string]*mcpPending{}
	}
	m.pending[p.requestID] = p
}

// take removes and returns the call waiting on approval request id (nil: none).
func (m *mcpState) take(id string) *mcpPending {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.pending[id]
	delete(m.pending, id)
	return p
}

// closeAll ends every server's session (the conversation is over; its workers have returned).
func (m *mcpState) closeAll() {
	m.mu.Lock()
	all := slices.Collect(maps.Values(m.servers))
	m.servers, m.pending = nil, nil
	m.mu.Unlock()
	for _, s := range all {
		<-s.ready // listers are workers: run waited for them
		if s.sess != nil {
			s.sess.Close()
		}
	}
}

// approvalAnswered handles a client's mcp_approval_response (already in the conversation): an
// approval starts a response that runs the call; a refusal leaves the mind to read it.
func (c *conversation) approvalAnswered(it wire.Item, eventID string) {
	p := c.mcp.take(it.MCP.ApprovalRequestID)
	if p == nil || !it.MCP.Approve {
		return
	}
	if we := c.startReplyWith(wire.ResponseParams{}, eventID, nil, p); we != nil {
		c.mcp.await(p) // still waiting: the client may answer again once the response ends
		c.send(we)
	}
}

// checkApproval refuses an mcp_approval_response whose request is not an mcp_approval_request of
// this conversation.
func (c *conversation) checkApproval(it wire.Item, eventID string) *wire.Error {
	req, ok := c.hist.itemCopy(it.MCP.ApprovalRequestID)
	if !ok || req.Type != wire.ItemMCPApprovalRequest {
		return &wire.Error{Type: wire.TypeInvalidRequest, Code: codeMCPApprovalGone, Param: "item.approval_request_id", EventID: eventID,
			Message: fmt.Sprintf("Invalid 'item.approval_request_id': the conversation has no mcp_approval_request '%s'.", it.MCP.ApprovalRequestID)}
	}
	return nil
}

// mcpOut is one MCP item of a reply's output, owned by the reply's writer.
type mcpOut struct {
	e        *entry
	target   mcpTarget
	approval bool // an mcp_approval_request: nothing runs until the client approves
}

// mcpDelta starts or extends a reply's MCP item for a call of a tool the route names; false when
// the call is not an MCP tool's (a function call).
func (run *replyRun) mcpDelta(d *mind.CallDelta) bool {
	p := run.p
	o := run.mcpCalls[d.Index]
	if o == nil {
		if run.calls[d.Index] != nil {
			return false
		}
		target, ok := run.mcpRoutes[d.Name]
		if !ok {
			return false
		}
		typ := wire.ItemMCPCall
		approval := target.server.cfg.Approval.Requires(d.Name)
		if approval {
			typ = wire.ItemMCPApprovalRequest
		}
		e := &entry{item: wire.Item{ID: wire.NewID("item_"), Type: typ, Status: wire.ItemInProgress, Name: d.Name,
			MCP: &wire.MCPItem{ServerLabel: target.server.cfg.Label}}}
		o = &mcpOut{e: e, target: target, approval: approval}
		if run.mcpCalls == nil {
			run.mcpCalls = map[int]*mcpOut{}
		}
		run.mcpCalls[d.Index] = o
		run.mcpOrder = append(run.mcpOrder, o)
		idx := len(run.outputs)
		run.outputs = append(run.outputs, e)
		p.send(wire.ResponseOutputItemAdded{ResponseID: run.r.id, OutputIndex: idx, Item: cloneItem(e.item)})
		run.addToConversation(e)
	}
	if d.Arguments != "" {
		p.hist.edit(o.e, func(it *wire.Item) { it.Arguments += d.Arguments })
		if !o.approval {
			p.send(wire.ResponseMCPCallArgumentsDelta{ResponseID: run.r.id, ItemID: o.e.item.ID, OutputIndex: run.outputIndex(o.e), Delta: d.Arguments})
		}
	}
	return true
}

// runMCP runs one MCP item of the reply once the mind's answer is whole (on the writer): an
// approval request waits for the client; a call goes to its server and its output (or error)
// lands on the item.
func (run *replyRun) runMCP(o *mcpOut) error {
	p := run.p
	it := p.hist.clone(o.e)
	if o.approval {
		if !run.r.outOfBand {
			p.mcp.await(&mcpPending{server: o.target.server, requestID: it.ID, name: it.Name, arguments: it.Arguments})
		}
		return nil
	}
	idx := run.outputIndex(o.e)
	p.send(wire.ResponseMCPCallArgumentsDone{ResponseID: run.r.id, ItemID: it.ID, OutputIndex: idx, Arguments: it.Arguments})
	p.send(wire.ResponseMCPCallInProgress{ItemID: it.ID, OutputIndex: idx})
	out, err := o.target.server.sess.Call(run.ctx, it.Name, it.Arguments)
	if run.ctx.Err() != nil {
		return context.Cause(run.ctx)
	}
	result := &wire.MCPItem{ServerLabel: it.MCP.ServerLabel, ApprovalRequestID: it.MCP.ApprovalRequestID}
	if err != nil {
		result.Error = mcpCallError(err)
		p.log.Info("mcp call failed", "server_label", result.ServerLabel, "tool", it.Name, "err", err)
	} else {
		result.Output = &out
	}
	p.hist.edit(o.e, func(it *wire.Item) { it.MCP = result })
	if err != nil {
		p.send(wire.ResponseMCPCallFailed{ItemID: it.ID, OutputIndex: idx})
	} else {
		p.send(wire.ResponseMCPCallCompleted{ItemID: it.ID, OutputIndex: idx})
	}
	return nil
}

// runApproved is a response that runs one approved call (no mind): its mcp_call item, run.
func (run *replyRun) runApproved(a *mcpPending) error {
	run.ctx, run.cancel = context.WithCancelCause(run.r.ctx)
	defer run.cancel(nil)
	p := run.p
	e := &entry{item: wire.Item{ID: wire.NewID("item_"), Type: wire.ItemMCPCall, Status: wire.ItemInProgress, Name: a.name,
		MCP: &wire.MCPItem{ServerLabel: a.server.cfg.Label, ApprovalRequestID: a.requestID}}}
	o := &mcpOut{e: e, target: mcpTarget{server: a.server}}
	run.mcpOrder = append(run.mcpOrder, o)
	idx := len(run.outputs)
	run.outputs = append(run.outputs, e)
	p.send(wire.ResponseOutputItemAdded{ResponseID: run.r.id, OutputIndex: idx, Item: cloneItem(e.item)})
	run.addToConversation(e)
	p.hist.edit(e, func(it *wire.Item) { it.Arguments = a.arguments })
	p.send(wire.ResponseMCPCallArgumentsDelta{ResponseID: run.r.id, ItemID: e.item.ID, OutputIndex: idx, Delta: a.arguments})
	return run.runMCP(o)
}

// mcpCallError is an mcp_call's error field for a failed call.
func mcpCallError(err error) *wire.MCPError {
	var ce *mcptool.CallError
	if errors.As(err, &ce) {
		me := &wire.MCPError{Type: ce.Type, Message: ce.Message}
		if ce.Type != "tool_execution_error" {
			code := ce.Code
			me.Code = &code
		}
		return me
	}
	code := 0
	return &wire.MCPError{Type: "http_error", Code: &code, Message: "the call failed"}
}

// mcpMessages renders an MCP item for the mind: a call it made and what came of it. declined maps
// an approval request's id to the client's refusal (its reason); an approval still waiting, or
// approved (its mcp_call follows), is not shown.
func mcpMessages(it wire.Item, declined map[string]string) []mind.Message {
	call := mind.Call{ID: it.ID, Name: it.Name, Arguments: it.Arguments}
	switch it.Type {
	case wire.ItemMCPCall:
		text := "(no output)"
		if m := it.MCP; m != nil && m.Error != nil {
			text = "Error: " + m.Error.Message
		} else if m != nil && m.Output != nil {
			text = *m.Output
		} else if it.Status != wire.ItemCompleted {
			return nil // still running, or cut: nothing came of it
		}
		return []mind.Message{{Role: mind.RoleAssistant, Calls: []mind.Call{call}}, {Role: mind.RoleTool, CallID: it.ID, Text: text}}
	case wire.ItemMCPApprovalRequest:
		reason, ok := declined[it.ID]
		if !ok {
			return nil
		}
		text := "The user declined this call."
		if reason != "" {
			text += " Reason: " + reason
		}
		return []mind.Message{{Role: mind.RoleAssistant, Calls: []mind.Call{call}}, {Role: mind.RoleTool, CallID: it.ID, Text: text}}
	}
	return nil
}

// declinedApprovals maps each refused approval request's id to the refusal's reason.
func declinedApprovals(items []wire.Item) map[string]string {
	var out map[string]string
	for _, it := range items {
		if it.Type == wire.ItemMCPApprovalResponse && it.MCP != nil && !it.MCP.Approve {
			if out == nil {
				out = map[string]string{}
			}
			out[it.MCP.ApprovalRequestID] = it.MCP.Reason
		}
	}
	return out
}

// mcpItemBytes is what an MCP item keeps beyond the common fields.
func mcpItemBytes(m *wire.MCPItem) int {
	if m == nil {
		return 0
	}
	n := len(m.ServerLabel) + len(m.ApprovalRequestID) + len(m.Reason)
	if m.Output != nil {
		n += len(*m.Output)
	}
	if m.Error != nil {
		n += len(m.Error.Message)
	}
	for _, t := range m.Tools {
		n += len(t.Name) + len(t.Description) + len(t.InputSchema) + len(t.Annotations)
	}
	return n
}
