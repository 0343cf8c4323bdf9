package mcptool

import "errors"

// Sentinels: the session maps them to named realtime errors.
var (
	// ErrDisabled: the operator allows no MCP host (Config.AllowHosts is empty).
	ErrDisabled = errors.New("mcp: no MCP host is allowed on this server")
	// ErrHostNotAllowed: the server URL's host is not on the operator's allow-list.
	ErrHostNotAllowed = errors.New("mcp: host not allowed")
	// ErrBadURL: the server URL is not an absolute http(s) URL.
	ErrBadURL = errors.New("mcp: bad server URL")
	// ErrTooManyTools: the server lists more tools than Config.MaxTools.
	ErrTooManyTools = errors.New("mcp: too many tools")
	// ErrResponseTooLarge: a response from the server passed Config.MaxResponseBytes.
	ErrResponseTooLarge = errors.New("mcp: response too large")
	// ErrRedirect: the server answered with a redirect (never followed).
	ErrRedirect = errors.New("mcp: redirect refused")
	// ErrToolFailed: the tool ran and reported an error (CallToolResult.isError).
	ErrToolFailed = errors.New("mcp: tool reported an error")
)
