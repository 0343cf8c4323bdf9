package mind

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

var _ Mind = (*OpenAI)(nil)

// OpenAIConfig names an OpenAI-compatible chat-completions server (OpenAI, Ollama, vLLM,
// llama.cpp…). Zero values take the documented defaults.
type OpenAIConfig struct {
	// URL is the API base ("http://127.0.0.1:11434/v1"); "/chat/completions" is appended unless
	// the URL already ends with it. Required.
	URL string
	// Model is sent as "model". Required.
	Model string
	// Key, when set, is sent as "Authorization: Bearer <Key>".
	Key string
	// Timeout bounds the wait for the server: for the first token after the request, and for
	// each next one (an idle timeout). Time spent in emit (the reply speaking) does not count, so
	// a long answer is never cut while it is being spoken. Default 60 s.
	Timeout time.Duration
	// Client does the HTTP; default a client without its own timeout (Timeout governs).
	Client *http.Client
	// TokenLimit names the field that carries a request's output cap: TokenLimitMaxTokens
	// ("max_tokens", the default: Ollama, vLLM, llama.cpp, older OpenAI models),
	// TokenLimitMaxCompletionTokens ("max_completion_tokens": OpenAI's reasoning models refuse
	// max_tokens), or TokenLimitBoth.
	TokenLimit TokenLimitField
}

// TokenLimitField is which request field carries Request.MaxOutputTokens.
type TokenLimitField string

// The fields an OpenAI-compatible server may read the output cap from.
const (
	TokenLimitMaxTokens           TokenLimitField = "max_tokens"
	TokenLimitMaxCompletionTokens TokenLimitField = "max_completion_tokens"
	TokenLimitBoth                TokenLimitField = "both"
)

// OpenAI is a mind behind any OpenAI-compatible POST /chat/completions with stream:true. It sends
// the instructions as a system message, the history with assistant turns, tool calls and tool
// results, and the tools as function tools; streamed tool_calls are assembled by index.
type OpenAI struct {
	cfg      OpenAIConfig
	endpoint string
}

// NewOpenAI validates cfg and returns the mind.
func NewOpenAI(cfg OpenAIConfig) (*OpenAI, error) {
	if cfg.URL == "" {
		return nil, errors.New("mind: openai needs a URL (--mind-url)")
	}
	if cfg.Model == "" {
		return nil, errors.New("mind: openai needs a model (--mind-model)")
	}
	if !strings.HasPrefix(cfg.URL, "http://") && !strings.HasPrefix(cfg.URL, "https://") {
		return nil, fmt.Errorf("mind: openai URL %q is not http(s)", cfg.URL)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 60 * time.Second
	}
	switch cfg.TokenLimit {
	case "":
		cfg.TokenLimit = TokenLimitMaxTokens
	case TokenLimitMaxTokens, TokenLimitMaxCompletionTokens, TokenLimitBoth:
	default:
		return nil, fmt.Errorf("mind: token limit field %q: max_tokens, max_completion_tokens or both", cfg.TokenLimit)
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	endpoint := strings.TrimRight(cfg.URL, "/")
	if !strings.HasSuffix(endpoint, "/chat/completions") {
		endpoint += "/chat/completions"
	}
	return &OpenAI{cfg: cfg, endpoint: endpoint}, nil
}

// Answer posts the conversation and streams the answer through emit.
func (o *OpenAI) Answer(ctx context.Context, req Request, emit func(Delta) error) (Reply, error) {
	body, err := json.Marshal(o.chatRequest(req))
	if err != nil {
		return Reply{}, fmt.Errorf("mind: encode request: %w", err)
	}
	tctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// The idle timer runs while we wait on the server and stops while emit has a piece.
	idle := time.AfterFunc(o.cfg.Timeout, func() { cancel(ErrTimeout) })
	defer idle.Stop()

	hreq, err := http.NewRequestWithContext(tctx, http.MethodPost, o.endpoint, bytes.NewReader(body))
	if err != nil {
		return Reply{}, fmt.Errorf("mind: build request: %w", err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "text/event-stream")
	if o.cfg.Key != "" {
		hreq.Header.Set("Authorization", "Bearer "+o.cfg.Key)
	}
	resp, err := o.cfg.Client.Do(hreq)
	if err != nil {
		return Reply{}, o.failure(ctx, tctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		if resp.StatusCode >= 400 && resp.StatusCode < 500 && hasAudio(req) {
			return Reply{}, &Error{Kind: ErrAudioRefused, Status: resp.StatusCode,
				Message: "the mind's server refused a request with audio (does its model hear audio?)", Err: errors.New(serverMessage(resp.Body))}
		}
		if resp.StatusCode >= 400 && resp.StatusCode < 500 && hasImages(req) {
			return Reply{}, &Error{Kind: ErrImagesRefused, Status: resp.StatusCode,
				Message: "the mind's server refused a request with images (does its model see images?)", Err: errors.New(serverMessage(resp.Body))}
		}
		return Reply{}, &Error{Kind: ErrUnavailable, Status: resp.StatusCode,
			Message: "the mind's server refused the request", Err: errors.New(serverMessage(resp.Body))}
	}

	var asm assembler
	stream := newSSEReader(resp.Body)
	for {
		data, err := stream.Next()
		if errors.Is(err, io.EOF) {
			break // servers that never send [DONE] end the stream by closing it
		}
		if err != nil {
			return asm.reply(), o.failure(ctx, tctx, err)
		}
		if data == "[DONE]" {
			break
		}
		deltas, err := decodeChunk([]byte(data), &asm)
		if err != nil {
			return asm.reply(), err
		}
		if !idle.Stop() {
			if ctx.Err() != nil {
				return asm.reply(), ctx.Err()
			}
			return asm.reply(), o.timedOut() // it fired as the chunk came
		}
		for _, d := range deltas {
			asm.add(d)
			if err := emit(d); err != nil {
				return asm.reply(), err
			}
		}
		idle.Reset(o.cfg.Timeout)
	}
	return asm.reply(), nil
}

// failure classifies a transport error: the caller's own cancellation passes through as ctx's
// error; our timeout and everything else become an *Error.
func (o *OpenAI) failure(ctx, tctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(context.Cause(tctx), ErrTimeout) {
		return o.timedOut()
	}
	return &Error{Kind: ErrUnavailable, Message: "the mind's server could not be reached", Err: err}
}

func (o *OpenAI) timedOut() error {
	return &Error{Kind: ErrTimeout, Message: fmt.Sprintf("no token from the mind's server for %s", o.cfg.Timeout)}
}

// serverMessage reads an error body's message ({"error":{"message":…}} or text), bounded.
func serverMessage(r io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(r, 4096))
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(b, &e) == nil && len(e.Error) > 0 {
		var obj struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(e.Error, &obj) == nil && obj.Message != "" {
			return obj.Message
		}
		var s string
		if json.Unmarshal(e.Error, &s) == nil {
			return s
		}
	}
	return strings.TrimSpace(string(b))
}

// The chat-completions wire shapes.

type chatRequest struct {
	Model             string             `json:"model"`
	Stream            bool               `json:"stream"`
	StreamOptions     *chatStreamOptions `json:"stream_options,omitempty"`
	Messages          []chatMessage      `json:"messages"`
	Tools             []chatTool         `json:"tools,omitempty"`
	ToolChoice        any                `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool              `json:"parallel_tool_calls,omitempty"`
	Temperature       *float64           `json:"temperature,omitempty"`
	MaxTokens         *int               `json:"max_tokens,omitempty"`
	// MaxCompletionTokens is the cap OpenAI's reasoning models read (they refuse max_tokens).
	MaxCompletionTokens *int `json:"max_completion_tokens,omitempty"`
}

type chatMessage struct {
	Role       Role           `json:"role"`
	Content    any            `json:"content"` // a string, an array of parts, or null
	ToolCalls  []chatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type chatToolCall struct {
	Index    *int             `json:"index,omitempty"`
	ID       string           `json:"id,omitempty"`
	Type     string           `json:"type,omitempty"`
	Function chatFunctionCall `json:"function"`
}

type chatFunctionCall struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type chatTool struct {
	Type     string       `json:"type"`
	Function chatFunction `json:"function"`
}

type chatFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

func (o *OpenAI) chatRequest(req Request) chatRequest {
	cr := chatRequest{Model: o.cfg.Model, Stream: true, StreamOptions: &chatStreamOptions{IncludeUsage: true}}
	if req.Temperature > 0 {
		cr.Temperature = &req.Temperature
	}
	if req.MaxOutputTokens > 0 {
		if o.cfg.TokenLimit != TokenLimitMaxCompletionTokens {
			cr.MaxTokens = &req.MaxOutputTokens
		}
		if o.cfg.TokenLimit != TokenLimitMaxTokens {
			cr.MaxCompletionTokens = &req.MaxOutputTokens
		}
	}
	if req.Instructions != "" {
		cr.Messages = append(cr.Messages, chatMessage{Role: RoleSystem, Content: req.Instructions})
	}
	for _, m := range req.History {
		msg := chatMessage{Role: m.Role, ToolCallID: m.CallID, Content: chatContent(m)}
		for _, c := range m.Calls {
			args := c.Arguments
			if args == "" {
				args = "{}"
			}
			msg.ToolCalls = append(msg.ToolCalls, chatToolCall{ID: c.ID, Type: "function",
				Function: chatFunctionCall{Name: c.Name, Arguments: args}})
		}
		cr.Messages = append(cr.Messages, msg)
	}
	for _, t := range req.Tools {
		cr.Tools = append(cr.Tools, chatTool{Type: "function",
			Function: chatFunction{Name: t.Name, Description: t.Description, Parameters: t.Parameters}})
	}
	if len(cr.Tools) > 0 {
		cr.ParallelToolCalls = req.ParallelToolCalls
		switch req.ToolChoice {
		case "", "auto":
		case "none", "required":
			cr.ToolChoice = req.ToolChoice
		default:
			cr.ToolChoice = map[string]any{"type": "function", "function": map[string]string{"name": req.ToolChoice}}
		}
	}
	return cr
}

type chatChunk struct {
	Choices []struct {
		Delta struct {
			Content   *string        `json:"content"`
			ToolCalls []chatToolCall `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *chatUsage      `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// decodeChunk turns one SSE data payload into deltas (only choice 0 is heard), and notes the
// chunk's finish reason and usage on asm.
func decodeChunk(data []byte, asm *assembler) ([]Delta, error) {
	var c chatChunk
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, &Error{Kind: ErrBadAnswer, Message: "the mind's stream carried a chunk that is not JSON", Err: err}
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		return nil, &Error{Kind: ErrUnavailable, Message: "the mind's server failed mid-answer",
			Err: errors.New(serverMessage(bytes.NewReader(append(append([]byte(`{"error":`), c.Error...), '}'))))}
	}
	if u := c.Usage.usage(); u != nil {
		asm.usage = u
	}
	if len(c.Choices) == 0 {
		return nil, nil // usage-only or keep-alive chunk
	}
	if f := c.Choices[0].FinishReason; f != nil && *f != "" {
		asm.stop = stopOf(*f)
	}
	d := c.Choices[0].Delta
	var out []Delta
	if d.Content != nil && *d.Content != "" {
		out = append(out, Delta{Text: *d.Content})
	}
	for i, tc := range d.ToolCalls {
		index := i
		if tc.Index != nil {
			index = *tc.Index
		}
		if index < 0 || index > 127 {
			return nil, &Error{Kind: ErrBadAnswer, Message: fmt.Sprintf("the mind's stream named tool call index %d", index)}
		}
		out = append(out, Delta{Call: &CallDelta{Index: index, ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments}})
	}
	return out, nil
}

// assembler builds the Reply from deltas; calls are keyed by their index.
type assembler struct {
	text  strings.Builder
	calls []Call
	slot  map[int]int // delta index → position in calls
	stop  string      // the finish reason, as Reply.Stop
	usage *Usage      // the stream's usage chunk
}

func (a *assembler) add(d Delta) {
	a.text.WriteString(d.Text)
	if d.Call == nil {
		return
	}
	if a.slot == nil {
		a.slot = map[int]int{}
	}
	pos, ok := a.slot[d.Call.Index]
	if !ok {
		pos = len(a.calls)
		a.slot[d.Call.Index] = pos
		a.calls = append(a.calls, Call{})
	}
	c := &a.calls[pos]
	if d.Call.ID != "" {
		c.ID = d.Call.ID
	}
	if d.Call.Name != "" {
		c.Name = d.Call.Name
	}
	c.Arguments += d.Call.Arguments
}

func (a *assembler) reply() Reply {
	return Reply{Text: a.text.String(), Calls: append([]Call(nil), a.calls...), Stop: a.stop, Usage: a.usage}
}
