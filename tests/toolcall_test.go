package tests

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// fakeLLM is an OpenAI-compatible /v1/chat/completions server (streaming SSE): asked with tools and
// no tool result yet, it calls get_weather({"city":"Paris"}); given a tool result, it answers
// "The tool says: <result>."
type fakeLLM struct {
	mu       sync.Mutex
	requests []map[string]any
}

func (f *fakeLLM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req map[string]any
	if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.requests = append(f.requests, req)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		w.(http.Flusher).Flush()
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "fake",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	var toolResult string
	msgs, _ := req["messages"].([]any)
	for _, m := range msgs {
		if mm, _ := m.(map[string]any); mm["role"] == "tool" {
			toolResult, _ = mm["content"].(string)
		}
	}
	if toolResult == "" {
		send(chunk(map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"index": 0, "id": "call_weather_1", "type": "function",
			"function": map[string]any{"name": "get_weather", "arguments": ""}}}}, nil))
		for _, part := range []string{`{"city":`, `"Paris"}`} {
			send(chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": part}}}}, nil))
		}
		send(chunk(map[string]any{}, "tool_calls"))
	} else {
		for _, word := range strings.SplitAfter("The tool says: "+toolResult+".", " ") {
			send(chunk(map[string]any{"content": word}, nil))
		}
		send(chunk(map[string]any{}, "stop"))
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// TestRealtimeToolCall: a function call round trip through the openai mind against a fake
// OpenAI-compatible LLM started here. The session's tools reach the LLM; its call comes back as a
// function_call item (arguments built from deltas, as realtime-api-beta builds them); the
// client's function_call_output goes back to the LLM as a tool message, and the answer is spoken.
func TestRealtimeToolCall(t *testing.T) {
	checkLeaks(t)
	needFlag(t, "mind-url", "mind-model")
	llm := &fakeLLM{}
	fake := httptest.NewServer(llm)
	defer fake.Close()
	s := startRealtime(t, serverOpts{Args: []string{"--mind-url", fake.URL + "/v1", "--mind-model", "fake-model"}})
	c := s.dialRealtime(t, s.mintBeta(t, s.jwt("tool-user", "")), true)
	c.until("session.created", nil)
	update := betaSessionUpdate(nil)
	update["session"].(map[string]any)["tools"] = []any{map[string]any{"type": "function", "name": "get_weather",
		"description": "Weather for a city", "parameters": map[string]any{"type": "object",
			"properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}}}}
	c.send(update)
	c.until("session.updated", nil)

	c.send(textItem("What is the weather in Paris?"))
	c.send(map[string]any{"type": "response.create"})
	evs := c.until("response.done", nil)
	var args strings.Builder
	var callID, name string
	for _, e := range evs {
		switch e.Type {
		case "response.function_call_arguments.delta":
			args.WriteString(e.str("delta"))
		case "response.output_item.done":
			if e.str("item", "type") == "function_call" {
				callID, name = e.str("item", "call_id"), e.str("item", "name")
			}
		}
	}
	if name != "get_weather" || callID == "" || args.String() != `{"city":"Paris"}` {
		t.Fatalf("function call: name %q call_id %q arguments from deltas %q; events %v", name, callID, args.String(), types(evs))
	}

	c.send(map[string]any{"type": "conversation.item.create", "item": map[string]any{
		"type": "function_call_output", "call_id": callID, "output": `{"sky":"sunny"}`}})
	c.until("conversation.item.created", nil)
	c.send(map[string]any{"type": "response.create"})
	evs = c.until("response.done", nil)
	if tr := replyTranscript(evs); !strings.Contains(tr, `The tool says: {"sky":"sunny"}`) {
		t.Errorf("answer after the tool: transcript %q", tr)
	}
	if len(replyAudio(t, evs)) == 0 {
		t.Errorf("the answer after the tool was not spoken: %v", types(evs))
	}
	c.checkStrict()

	llm.mu.Lock()
	defer llm.mu.Unlock()
	if len(llm.requests) != 2 {
		t.Fatalf("the LLM was asked %d times, want 2", len(llm.requests))
	}
	if tools, _ := llm.requests[0]["tools"].([]any); len(tools) != 1 || !strings.Contains(fmt.Sprint(tools[0]), "get_weather") {
		t.Errorf("the session's tools did not reach the LLM: %v", llm.requests[0]["tools"])
	}
	if llm.requests[0]["stream"] != true || llm.requests[0]["model"] != "fake-model" {
		t.Errorf("first LLM request: stream %v model %v", llm.requests[0]["stream"], llm.requests[0]["model"])
	}
	c.close()
	s.stop()
}
