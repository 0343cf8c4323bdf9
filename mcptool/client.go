package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Config bounds voiced's MCP client. Zero values take the documented defaults; AllowHosts empty
// turns MCP off (every server is refused with ErrDisabled).
type Config struct {
	// AllowHosts are the hosts a server URL may name: "host" (any port) or "host:port", compared
	// case-insensitively with the URL's host (an IP literal is written as it appears in the URL,
	// "[::1]:8080" for IPv6 with a port). Nothing else is ever dialled.
	AllowHosts []string
	// ConnectTimeout bounds connecting, the MCP handshake and listing the tools. Default 10 s.
	ConnectTimeout time.Duration
	// CallTimeout bounds one tool call, from the request to its whole result. Default 30 s.
	CallTimeout time.Duration
	// MaxResponseBytes bounds each HTTP response body (and each server-sent event). Default 1 MiB.
	MaxResponseBytes int64
	// MaxTools is the most tools one server may list (after allowed_tools). Default 32.
	MaxTools int
	// MaxOutputBytes is the most of a call's output kept for the mind and the client; a longer
	// output is cut there (on a rune boundary). Default 32 KiB.
	MaxOutputBytes int
	// MaxConcurrentCalls is the most calls running at once in the process; more wait their turn
	// (within their own timeout). Default 16.
	MaxConcurrentCalls int
}

// Client opens MCP sessions under Config's rules. Safe for concurrent use.
type Client struct {
	cfg       Config
	allow     map[string]bool
	calls     chan struct{} // a slot per running call
	transport *http.Transport
}

// New validates cfg and returns the client.
func New(cfg Config) (*Client, error) {
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = 10 * time.Second
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = 30 * time.Second
	}
	if cfg.MaxResponseBytes <= 0 {
		cfg.MaxResponseBytes = 1 << 20
	}
	if cfg.MaxTools <= 0 {
		cfg.MaxTools = 32
	}
	if cfg.MaxOutputBytes <= 0 {
		cfg.MaxOutputBytes = 32 << 10
	}
	if cfg.MaxConcurrentCalls <= 0 {
		cfg.MaxConcurrentCalls = 16
	}
	c := &Client{cfg: cfg, allow: map[string]bool{}, calls: make(chan struct{}, cfg.MaxConcurrentCalls)}
	for _, h := range cfg.AllowHosts {
		h = strings.ToLower(strings.TrimSpace(h))
		if h == "" {
			continue
		}
		if strings.ContainsAny(h, "/@?#*") {
			return nil, fmt.Errorf("mcp: allowed host %q: give a host or host:port, no scheme, path or wildcard", h)
		}
		c.allow[h] = true
	}
	dialer := &net.Dialer{Timeout: cfg.ConnectTimeout}
	c.transport = &http.Transport{
		Proxy: nil, // never through the environment's proxy: the allow-list is about where bytes go
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			// The dial re-checks what the request checked: only an allowed host:port is dialled.
			if !c.allowedHostPort(addr) {
				return nil, fmt.Errorf("dial %s: %w", addr, ErrHostNotAllowed)
			}
			return dialer.DialContext(ctx, network, addr)
		},
		TLSHandshakeTimeout:    cfg.ConnectTimeout,
		ResponseHeaderTimeout:  cfg.CallTimeout,
		MaxResponseHeaderBytes: 64 << 10,
		MaxIdleConns:           64,
		IdleConnTimeout:        90 * time.Second,
		ForceAttemptHTTP2:      true,
	}
	return c, nil
}

// Enabled reports whether any MCP host is allowed.
func (c *Client) Enabled() bool { return c != nil && len(c.allow) > 0 }

// Config is the client's configuration with its defaults filled in.
func (c *Client) Config() Config { return c.cfg }

// CloseIdle closes the idle connections to MCP servers.
func (c *Client) CloseIdle() { c.transport.CloseIdleConnections() }

// Check parses a server URL and says whether it may be used: absolute http(s), no user info, its
// host on the allow-list.
func (c *Client) Check(rawURL string) (*url.URL, error) {
	if !c.Enabled() {
		return nil, ErrDisabled
	}
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return nil, fmt.Errorf("%w: %q must be an absolute http(s) URL without user info", ErrBadURL, clip(rawURL))
	}
	if !c.allowedURL(u) {
		return nil, fmt.Errorf("%w: %s", ErrHostNotAllowed, u.Host)
	}
	return u, nil
}

func (c *Client) allowedURL(u *url.URL) bool {
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return c.allowedHostPort(net.JoinHostPort(u.Hostname(), port))
}

// allowedHostPort: addr is "host:port" as dialled.
func (c *Client) allowedHostPort(addr string) bool {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	host = strings.ToLower(host)
	bracketed := host
	if strings.Contains(host, ":") {
		bracketed = "[" + host + "]"
	}
	return c.allow[bracketed] || c.allow[host] || c.allow[bracketed+":"+port]
}

// Server names one MCP server: its URL and the headers sent with every request (an
// Authorization header among them).
type Server struct {
	URL     string
	Headers http.Header
}

// Tool is one tool a server lists.
type Tool struct {
	Name        string
	Description string
	InputSchema json.RawMessage // a JSON Schema object
	Annotations json.RawMessage // null when the server gave none
}

// Session is one open MCP session. Its methods are safe for concurrent use.
type Session struct {
	c     *Client
	cs    *mcp.ClientSession
	guard *guard
}

// Connect opens a session with the server and completes the MCP handshake, within
// ConnectTimeout.
func (c *Client) Connect(ctx context.Context, s Server) (*Session, error) {
	u, err := c.Check(s.URL)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.ConnectTimeout)
	defer cancel()
	g := &guard{c: c, base: c.transport, headers: s.Headers.Clone()}
	hc := &http.Client{
		Transport: g,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return ErrRedirect
		},
	}
	t := &mcp.StreamableClientTransport{Endpoint: u.String(), HTTPClient: hc, MaxRetries: -1,
		DisableStandaloneSSE: true, MaxEventSize: int(c.cfg.MaxResponseBytes)}
	client := mcp.NewClient(&mcp.Implementation{Name: "voiced", Version: "1"}, nil)
	cs, err := client.Connect(ctx, t, nil)
	if err != nil {
		return nil, fmt.Errorf("mcp: connect to %s: %w", u.Host, err)
	}
	return &Session{c: c, cs: cs, guard: g}, nil
}

// Close ends the session.
func (s *Session) Close() error { return s.cs.Close() }

// ListTools lists the server's tools that keep passes (nil: all), within ConnectTimeout; more
// than MaxTools is ErrTooManyTools.
func (s *Session) ListTools(ctx context.Context, keep func(name string) bool) ([]Tool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.c.cfg.ConnectTimeout)
	defer cancel()
	var tools []Tool
	for t, err := range s.cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("mcp: list tools: %w", err)
		}
		if keep != nil && !keep(t.Name) {
			continue
		}
		if len(tools) == s.c.cfg.MaxTools {
			return nil, fmt.Errorf("%w: the server lists more than %d", ErrTooManyTools, s.c.cfg.MaxTools)
		}
		schema, err := json.Marshal(t.InputSchema)
		if err != nil || string(schema) == "null" {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		annotations := json.RawMessage("null")
		if t.Annotations != nil {
			if b, err := json.Marshal(t.Annotations); err == nil {
				annotations = b
			}
		}
		tools = append(tools, Tool{Name: t.Name, Description: t.Description, InputSchema: schema, Annotations: annotations})
	}
	return tools, nil
}

// CallError is a failed call, in the shape of the realtime API's mcp_call error: Type is
// "protocol_error" (the server refused the request: Code is its JSON-RPC code),
// "tool_execution_error" (the tool ran and failed) or "http_error" (the transport failed).
type CallError struct {
	Type    string
	Code    int
	Message string
	Err     error
}

func (e *CallError) Error() string { return "mcp: " + e.Type + ": " + e.Message }
func (e *CallError) Unwrap() error { return e.Err }

// Call runs one tool with arguments (JSON object text; "" is {}), within CallTimeout and the
// process's MaxConcurrentCalls, and returns its output as text (its text contents joined; other
// contents and structured content as JSON), cut to MaxOutputBytes. A failure is a *CallError.
func (s *Session) Call(ctx context.Context, name, arguments string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.c.cfg.CallTimeout)
	defer cancel()
	select {
	case s.c.calls <- struct{}{}:
		defer func() { <-s.c.calls }()
	case <-ctx.Done():
		return "", &CallError{Type: "http_error", Message: "no call slot free before the call's timeout", Err: ctx.Err()}
	}
	if strings.TrimSpace(arguments) == "" {
		arguments = "{}"
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(arguments), &args); err != nil {
		return "", &CallError{Type: "protocol_error", Code: -32602, Message: "the arguments are not a JSON object", Err: err}
	}
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		var we *jsonrpc.Error
		if errors.As(err, &we) {
			return "", &CallError{Type: "protocol_error", Code: int(we.Code), Message: clip(we.Message), Err: err}
		}
		msg := "the MCP server could not be reached or answered badly"
		switch {
		case s.guard.tooLarge.Swap(false):
			// The SDK flattens its transport's errors into text: the guard says what tripped.
			msg, err = fmt.Sprintf("the server's response passed %d bytes", s.c.cfg.MaxResponseBytes), fmt.Errorf("%w: %w", ErrResponseTooLarge, err)
		case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil:
			msg = fmt.Sprintf("no result within %s", s.c.cfg.CallTimeout)
		}
		return "", &CallError{Type: "http_error", Message: msg, Err: err}
	}
	out := s.c.cut(outputText(res))
	if res.IsError {
		return out, &CallError{Type: "tool_execution_error", Message: out, Err: ErrToolFailed}
	}
	return out, nil
}

// outputText renders a result as the text the mind reads.
func outputText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
			continue
		}
		if b, err := json.Marshal(c); err == nil {
			parts = append(parts, string(b))
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	return strings.Join(parts, "\n")
}

func (c *Client) cut(s string) string {
	if len(s) <= c.cfg.MaxOutputBytes {
		return s
	}
	s = s[:c.cfg.MaxOutputBytes]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// guard is every MCP request's path: the host checked again, the session's headers set, the
// response body bounded.
type guard struct {
	c        *Client
	base     http.RoundTripper
	headers  http.Header
	tooLarge atomic.Bool // a response body passed the bound (cleared by the call that reports it)
}

func (g *guard) RoundTrip(req *http.Request) (*http.Response, error) {
	if !g.c.allowedURL(req.URL) {
		return nil, fmt.Errorf("%w: %s", ErrHostNotAllowed, req.URL.Host)
	}
	req = req.Clone(req.Context())
	for k, v := range g.headers {
		req.Header[k] = v
	}
	resp, err := g.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &boundedBody{rc: resp.Body, left: g.c.cfg.MaxResponseBytes, tripped: &g.tooLarge}
	return resp, nil
}

// boundedBody fails a read past its bound with ErrResponseTooLarge.
type boundedBody struct {
	rc      io.ReadCloser
	left    int64
	tripped *atomic.Bool
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		b.tripped.Store(true)
		return 0, ErrResponseTooLarge
	}
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }

func clip(s string) string {
	if len(s) > 200 {
		s = s[:200]
		for len(s) > 0 && !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		return s + "…"
	}
	return s
}
