package main

import (
	"flag"
	"time"

	"github.com/voiced/voiced/mcptool"
)

// mcpFlags configure the MCP client that serves realtime tools of type "mcp" (mcptool.Config).
type mcpFlags struct {
	allowHosts       string
	connectTimeout   time.Duration
	callTimeout      time.Duration
	maxResponseBytes int64
	maxTools         int
	maxCalls         int
}

func (m *mcpFlags) flags(fs *flag.FlagSet) {
	fs.StringVar(&m.allowHosts, "mcp-allow-hosts", "", "comma-separated hosts (host or host:port) a realtime session's MCP tools (type mcp, server_url) may reach; empty: MCP tools are refused (mcp_tools_unsupported). A server URL is the client's choice: list only servers meant for clients")
	fs.DurationVar(&m.connectTimeout, "mcp-connect-timeout", 10*time.Second, "the longest connecting to an MCP server and listing its tools may take")
	fs.DurationVar(&m.callTimeout, "mcp-call-timeout", 30*time.Second, "the longest one MCP tool call may take")
	fs.Int64Var(&m.maxResponseBytes, "mcp-max-response-bytes", 1<<20, "the most bytes one response from an MCP server may carry")
	fs.IntVar(&m.maxTools, "mcp-max-tools", 32, "the most tools one MCP server may list (after allowed_tools)")
	fs.IntVar(&m.maxCalls, "mcp-max-calls", 16, "MCP tool calls running at once in this process; more wait their turn")
}

func (m *mcpFlags) client() (*mcptool.Client, error) {
	return mcptool.New(mcptool.Config{AllowHosts: splitList(m.allowHosts), ConnectTimeout: m.connectTimeout,
		CallTimeout: m.callTimeout, MaxResponseBytes: m.maxResponseBytes, MaxTools: m.maxTools, MaxConcurrentCalls: m.maxCalls})
}
