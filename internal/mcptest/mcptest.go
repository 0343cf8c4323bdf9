// Package mcptest is an MCP server for tests, built with the same Go SDK voiced's client uses,
// served over the streamable HTTP transport on loopback. Its tools are fixed and their results
// known, so a test can tell the tool's own words in a reply.
package mcptest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// OrderStatus is what lookup_order answers for an order id: text no model would make up.
func OrderStatus(id string) string {
	return fmt.Sprintf("Order %s ships on Tuesday from the Zanzibar warehouse.", id)
}

// Server is a running test MCP server.
type Server struct {
	URL string // the MCP endpoint, http://127.0.0.1:port/mcp
	srv *httptest.Server

	mu      sync.Mutex
	calls   []string      // the tools called, in order
	headers []http.Header // every request's headers
}

type orderIn struct {
	OrderID string `json:"order_id" jsonschema:"the order's id"`
}

type echoIn struct {
	Text string `json:"text"`
}

// Start serves the tools: lookup_order(order_id) → OrderStatus, fail() → a tool error,
// big() → 200 KiB of text, echo(text) → text. Stop it with Close.
func Start() *Server {
	s := &Server{}
	server := mcp.NewServer(&mcp.Implementation{Name: "voiced-test-mcp", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "lookup_order", Description: "Look up where an order is."},
		func(_ context.Context, _ *mcp.CallToolRequest, in orderIn) (*mcp.CallToolResult, any, error) {
			s.record("lookup_order")
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: OrderStatus(in.OrderID)}}}, nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "fail", Description: "Always fails."},
		func(_ context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			s.record("fail")
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "the warehouse is closed"}}}, nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "big", Description: "Answers at length."},
		func(_ context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			s.record("big")
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", 200<<10)}}}, nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "echo", Description: "Says the text back."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			s.record("echo")
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	mux := http.NewServeMux()
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.headers = append(s.headers, r.Header.Clone())
		s.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	// /moved redirects to /mcp: a client must not follow it.
	mux.Handle("/moved", http.RedirectHandler("/mcp", http.StatusTemporaryRedirect))
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL + "/mcp"
	return s
}

// Host is the server's host:port.
func (s *Server) Host() string { return strings.TrimPrefix(s.srv.URL, "http://") }

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

func (s *Server) record(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, name)
}

// Calls returns the tools called so far, in order.
func (s *Server) Calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

// Headers returns every request's headers so far.
func (s *Server) Headers() []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]http.Header(nil), s.headers...)
}
