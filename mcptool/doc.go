// Package mcptool is voiced's client of remote MCP servers (the Model Context Protocol, over its
// streamable HTTP transport, with the official Go SDK): a realtime session's `tools` of type "mcp"
// name a server, and voiced lists its tools and runs the calls the mind makes.
//
// A server URL is chosen by the client, so every outbound connection is held to the operator's
// allow-list of hosts (Config.AllowHosts; empty: MCP is off), with no redirects, no proxy, a dial
// that re-checks the host, timeouts on connecting and on each call, a bound on every response's
// bytes, on the tools one server may list, on a call's output, and on the calls running at once.
// It imports no other voiced package.
package mcptool
