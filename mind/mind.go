// Package mind hears a conversation and answers in streamed text and function calls: Echo (built
// in) and OpenAI (any OpenAI-compatible /v1/chat/completions server with streaming), with tools.
package mind

import (
	"context"
	"encoding/json"
)

// Mind hears the conversation so far and answers. Answer streams each piece through emit as it
// exists (text deltas, function-call deltas) and returns the whole reply once it is complete.
// It honours ctx: a cancelled ctx ends the answer promptly with ctx's error. An error from emit
// stops the answer and is returned as is.
type Mind interface {
	Answer(ctx context.Context, req Request, emit func(Delta) error) (Reply, error)
}

// Request is what a mind hears: the session's instructions, the history (oldest first) and the
// tools it may call.
type Request struct {
	Instructions string
	History      []Message
	Tools        []Tool
	// ToolChoice is "auto" (or empty), "none", "required", or a tool's name.
	ToolChoice string
	// Temperature is the sampling temperature (0: the server's default).
	Temperature float64
	// MaxOutputTokens caps the answer (0: no cap); an answer cut there returns Reply.Stop
	// StopMaxTokens.
	MaxOutputTokens int
	// ParallelToolCalls, when set, says whether the answer may make several calls at once.
	ParallelToolCalls *bool
}

// Role of a message in the history.
type Role string

// Roles, as chat completions names them.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one turn of the history. An assistant message may carry Calls (the function calls it
// made); a tool message carries CallID and the function's output in Text. A message item's
// content is in Parts (text and images, in order; parts.go); Text is its text parts joined, for
// minds that read text only.
type Message struct {
	Role   Role
	Text   string
	Parts  []Part
	Calls  []Call // assistant only
	CallID string // tool only: the call this output answers
}

// Tool is a function the mind may call. Parameters is a JSON Schema (may be nil).
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// Call is one complete function call.
type Call struct {
	ID        string // call_…
	Name      string
	Arguments string // JSON text, as the model wrote it
}

// Delta is one streamed piece of an answer: a text delta, or a piece of function call Index (the
// first piece of each call carries its ID and Name, later ones Arguments only).
type Delta struct {
	Text string
	Call *CallDelta
}

// CallDelta is one streamed piece of a function call.
type CallDelta struct {
	Index     int // which call of this answer (0, 1, …), in order of first appearance
	ID        string
	Name      string
	Arguments string // the next piece of the arguments' JSON text
}

// Reply is a whole answer: its text and the function calls it made, in order.
type Reply struct {
	Text  string
	Calls []Call
	// Stop says why the answer stopped early ("" when it finished): StopMaxTokens,
	// StopContentFilter.
	Stop string
	// Usage is the answer's tokens as the mind's server counted them (nil: not said).
	Usage *Usage
}

// LastUserText returns the text of the last user message in history, or "".
func LastUserText(history []Message) string {
	for i := len(history) - 1; i >= 0; i-- {
		if history[i].Role == RoleUser {
			return history[i].Text
		}
	}
	return ""
}
