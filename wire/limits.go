package wire

import (
	"encoding/json"
	"slices"
)

// Bounds on what one client event may carry that the session keeps (an id it stores, a name it
// matches, the instructions and tools it hands to every reply). The socket's read limit bounds an
// event as a whole (16 MiB, for a 15 MiB append); these bound the parts that outlive the event,
// so that no field of a few bytes' meaning can hold megabytes. Each refusal is
// string_above_max_length / array_above_max_length (OpenAI's codes for the same checks), type
// invalid_request_error, with the param it names; the session stays open.
const (
	// MaxIDBytes bounds every client-chosen id: event_id, item.id, previous_item_id, item_id,
	// call_id, response_id, item_reference ids. OpenAI's own ids are ~30 characters and clients
	// send UUIDs (36) or prefixed ones; 256 is far past any of them.
	MaxIDBytes = 256
	// MaxModelBytes bounds a model name (the handshake's ?model=, a minted session's model): it is
	// only echoed (session.model), never used. OpenAI's are under 40 characters
	// ("gpt-4o-mini-realtime-preview-2024-12-17"); 256, as for ids, leaves room for any
	// provider/repository:tag name a client is configured with.
	MaxModelBytes = 256
	// MaxNameBytes bounds a function's name (tools, tool_choice, function_call items) and a
	// voice: OpenAI allows 64 characters for function names; voice names are shorter.
	MaxNameBytes = 64
	// MaxInstructionsBytes bounds instructions (session.update, response.create). A model's
	// context is ~128k tokens, about half a MiB of text: more could never be read.
	MaxInstructionsBytes = 512 << 10
	// MaxTools bounds the function tools of a session or a response (OpenAI's chat completions
	// accept at most 128).
	MaxTools = 128
	// MaxToolsBytes bounds the tools' definitions together (names, descriptions, parameter
	// schemas as sent): they are sent to the mind with every reply, and share its context.
	MaxToolsBytes = 512 << 10
	// MaxTranscriptionPromptBytes bounds input transcription's prompt (Whisper reads at most
	// 224 tokens of it).
	MaxTranscriptionPromptBytes = 4 << 10
	// MaxMetadataPairs, MaxMetadataKeyBytes, MaxMetadataValueBytes: response.metadata, as
	// OpenAI documents it (16 pairs, keys up to 64 characters, values up to 512).
	MaxMetadataPairs      = 16
	MaxMetadataKeyBytes   = 64
	MaxMetadataValueBytes = 512
)

// Codes of the refusals of a string or an array over its bound (OpenAI's).
const (
	CodeStringTooLong = "string_above_max_length"
	CodeArrayTooLong  = "array_above_max_length"
)

// ErrStringTooLong refuses a string parameter longer than max bytes.
func ErrStringTooLong(param, eventID string, max, got int) *Error {
	return invalidRequest(CodeStringTooLong, param, eventID,
		"Invalid '%s': string too long. Expected a string with maximum length %d, but got a string with length %d instead.", param, max, got)
}

// ErrArrayTooLong refuses an array (or an object's members) with more than max entries.
func ErrArrayTooLong(param, eventID string, max, got int) *Error {
	return invalidRequest(CodeArrayTooLong, param, eventID,
		"Invalid '%s': array too long. Expected an array with maximum length %d, but got an array with length %d instead.", param, max, got)
}

// boundString refuses s when it is longer than max bytes.
func boundString(s, param, eventID string, max int) *Error {
	if len(s) > max {
		return ErrStringTooLong(param, eventID, max, len(s))
	}
	return nil
}

// eventIDOf returns the event's id when it may be echoed: an id over MaxIDBytes is not echoed
// (an error event must not carry megabytes back).
func eventIDOf(id string) string {
	if len(id) > MaxIDBytes {
		return ""
	}
	return id
}

// toolsBytes is the size of tool definitions as kept.
func toolsBytes(tools []Tool) int {
	n := 0
	for _, t := range tools {
		n += len(t.Type) + len(t.Name) + len(t.Description) + len(t.Parameters)
		if m := t.MCP; m != nil {
			n += len(m.Label) + len(m.URL) + len(m.Description) + len(m.Authorization)
			for k, v := range m.Headers {
				n += len(k) + len(v)
			}
			for _, s := range slices.Concat(m.AllowedTools, m.Approval.Always, m.Approval.Never) {
				n += len(s)
			}
		}
	}
	return n
}

// parseMetadata reads response.metadata: an object of strings, within OpenAI's bounds. A wrongly
// typed value is named by its key and its kind.
func parseMetadata(raw json.RawMessage, param, id string) (map[string]string, *Error) {
	m, err := asObject(raw, param, id)
	if err != nil {
		return nil, err
	}
	if len(m) > MaxMetadataPairs {
		return nil, ErrArrayTooLong(param, id, MaxMetadataPairs, len(m))
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if err := boundString(k, param, id, MaxMetadataKeyBytes); err != nil {
			return nil, invalidRequest(CodeStringTooLong, param, id,
				"Invalid '%s': a key is too long. Expected keys with maximum length %d, but got a key with length %d instead.", param, MaxMetadataKeyBytes, len(k))
		}
		p := param + "." + clip(k)
		s, err := parseString(v, p, id)
		if err != nil {
			return nil, err
		}
		if err := boundString(s, p, id, MaxMetadataValueBytes); err != nil {
			return nil, err
		}
		out[k] = s
	}
	return out, nil
}
