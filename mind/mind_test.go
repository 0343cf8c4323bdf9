package mind

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// fakeChat is an OpenAI-compatible chat-completions server that streams the given SSE events and
// records the request it was sent.
type fakeChat struct {
	events []string // each an SSE data payload; "[DONE]" included by the caller
	status int
	hold   chan struct{} // when set, the handler waits on it (or the request's end) before streaming
	got    chan chatRequestSeen
	// stallAfter, when > 0, stops the stream after that many events until the request ends (a
	// server that goes quiet mid-answer).
	stallAfter int
}

type chatRequestSeen struct {
	auth string
	body map[string]any
}

func (f *fakeChat) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	var body map[string]any
	json.NewDecoder(r.Body).Decode(&body)
	if f.got != nil {
		f.got <- chatRequestSeen{auth: r.Header.Get("Authorization"), body: body}
	}
	if f.hold != nil {
		select {
		case <-f.hold:
		case <-r.Context().Done():
			return
		}
	}
	if f.status != 0 {
		w.WriteHeader(f.status)
		io.WriteString(w, `{"error":{"message":"model not loaded","type":"server_error"}}`)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for i, e := range f.events {
		if f.stallAfter > 0 && i == f.stallAfter {
			<-r.Context().Done()
			return
		}
		fmt.Fprintf(w, "data: %s\n\n", e)
		w.(http.Flusher).Flush()
	}
}

func textChunk(s string) string {
	b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": s}}}})
	return string(b)
}

func callChunk(index int, id, name, args string) string {
	tc := map[string]any{"index": index, "function": map[string]any{"arguments": args}}
	if id != "" {
		tc["id"] = id
		tc["type"] = "function"
		tc["function"].(map[string]any)["name"] = name
	}
	b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"tool_calls": []any{tc}}}}})
	return string(b)
}

func newFake(t *testing.T, f *fakeChat) *OpenAI {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	m, err := NewOpenAI(OpenAIConfig{URL: srv.URL + "/v1", Model: "tiny", Key: "sk-test", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func collect(t *testing.T, m Mind, req Request) ([]Delta, Reply, error) {
	t.Helper()
	var deltas []Delta
	reply, err := m.Answer(context.Background(), req, func(d Delta) error {
		deltas = append(deltas, d)
		return nil
	})
	return deltas, reply, err
}

func TestOpenAIStreamsText(t *testing.T) {
	f := &fakeChat{events: []string{textChunk("Hello"), textChunk(" there."), `{"choices":[],"usage":{"total_tokens":3}}`, "[DONE]"},
		got: make(chan chatRequestSeen, 1)}
	m := newFake(t, f)
	req := Request{
		Instructions: "Be brief.",
		History: []Message{
			{Role: RoleUser, Text: "What is the weather?"},
			{Role: RoleAssistant, Calls: []Call{{ID: "call_1", Name: "weather", Arguments: `{"city":"Oslo"}`}}},
			{Role: RoleTool, CallID: "call_1", Text: `{"temp":3}`},
			{Role: RoleAssistant, Text: "It is 3 degrees."},
			{Role: RoleUser, Text: "Thanks"},
		},
		Tools: []Tool{{Name: "weather", Description: "weather now", Parameters: json.RawMessage(`{"type":"object"}`)}},
	}
	deltas, reply, err := collect(t, m, req)
	if err != nil {
		t.Fatal(err)
	}
	if reply.Text != "Hello there." || len(reply.Calls) != 0 {
		t.Fatalf("reply = %+v", reply)
	}
	if len(deltas) != 2 || deltas[0].Text != "Hello" || deltas[1].Text != " there." {
		t.Fatalf("deltas = %+v", deltas)
	}
	seen := <-f.got
	if seen.auth != "Bearer sk-test" {
		t.Errorf("Authorization = %q", seen.auth)
	}
	body := seen.body
	if body["model"] != "tiny" || body["stream"] != true {
		t.Errorf("model/stream = %v/%v", body["model"], body["stream"])
	}
	msgs := body["messages"].([]any)
	wantRoles := []string{"system", "user", "assistant", "tool", "assistant", "user"}
	if len(msgs) != len(wantRoles) {
		t.Fatalf("messages = %v", msgs)
	}
	for i, r := range wantRoles {
		if got := msgs[i].(map[string]any)["role"]; got != r {
			t.Errorf("message %d role = %v, want %s", i, got, r)
		}
	}
	call := msgs[2].(map[string]any)["tool_calls"].([]any)[0].(map[string]any)
	if call["id"] != "call_1" || call["function"].(map[string]any)["name"] != "weather" ||
		call["function"].(map[string]any)["arguments"] != `{"city":"Oslo"}` {
		t.Errorf("assistant tool call = %v", call)
	}
	if msgs[3].(map[string]any)["tool_call_id"] != "call_1" {
		t.Errorf("tool message = %v", msgs[3])
	}
	tools := body["tools"].([]any)
	fn := tools[0].(map[string]any)["function"].(map[string]any)
	if tools[0].(map[string]any)["type"] != "function" || fn["name"] != "weather" || fn["parameters"] == nil {
		t.Errorf("tools = %v", tools)
	}
}

func TestOpenAIAssemblesToolCalls(t *testing.T) {
	f := &fakeChat{events: []string{
		textChunk("Let me look."),
		callChunk(0, "call_a", "weather", ""),
		callChunk(1, "call_b", "time", `{"tz":`),
		callChunk(0, "", "", `{"city":`),
		callChunk(0, "", "", `"Oslo"}`),
		callChunk(1, "", "", `"UTC"}`),
		"[DONE]",
	}}
	m := newFake(t, f)
	deltas, reply, err := collect(t, m, Request{History: []Message{{Role: RoleUser, Text: "weather and time?"}}})
	if err != nil {
		t.Fatal(err)
	}
	want := []Call{{ID: "call_a", Name: "weather", Arguments: `{"city":"Oslo"}`}, {ID: "call_b", Name: "time", Arguments: `{"tz":"UTC"}`}}
	if fmt.Sprint(reply.Calls) != fmt.Sprint(want) || reply.Text != "Let me look." {
		t.Fatalf("reply = %+v, want calls %+v", reply, want)
	}
	var args0 strings.Builder
	for _, d := range deltas {
		if d.Call != nil && d.Call.Index == 0 {
			args0.WriteString(d.Call.Arguments)
		}
	}
	if args0.String() != `{"city":"Oslo"}` {
		t.Errorf("streamed arguments of call 0 = %q", args0.String())
	}
}

func TestOpenAIFailures(t *testing.T) {
	tests := map[string]struct {
		fake *fakeChat
		kind error
	}{
		"server error status": {fake: &fakeChat{status: http.StatusServiceUnavailable}, kind: ErrUnavailable},
		"chunk not json":      {fake: &fakeChat{events: []string{textChunk("Hi"), "{not json"}}, kind: ErrBadAnswer},
		"error mid-stream":    {fake: &fakeChat{events: []string{`{"error":{"message":"overloaded"}}`}}, kind: ErrUnavailable},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m := newFake(t, tc.fake)
			_, _, err := collect(t, m, Request{History: []Message{{Role: RoleUser, Text: "hi"}}})
			var me *Error
			if !errors.As(err, &me) || !errors.Is(err, tc.kind) {
				t.Fatalf("err = %v, want *Error of kind %v", err, tc.kind)
			}
		})
	}
}

func TestOpenAIUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	m, _ := NewOpenAI(OpenAIConfig{URL: url, Model: "m"})
	_, _, err := collect(t, m, Request{})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
}

func TestOpenAITimeout(t *testing.T) {
	f := &fakeChat{hold: make(chan struct{})}
	defer close(f.hold)
	srv := httptest.NewServer(f)
	defer srv.Close()
	m, _ := NewOpenAI(OpenAIConfig{URL: srv.URL + "/v1/chat/completions", Model: "m", Timeout: 50 * time.Millisecond})
	_, _, err := collect(t, m, Request{})
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
}

// TestOpenAITimeoutIsIdle: the timeout bounds the server's silence, not the answer: an emit that
// takes longer than the timeout (the reply speaking) does not cut the answer, and a server that
// goes quiet mid-stream is cut.
func TestOpenAITimeoutIsIdle(t *testing.T) {
	// Long enough that a loaded machine's scheduling gap between two chunks is not a stall (30 ms
	// failed 1 run in 5 at load 30); emitting takes 3× as long, which the timeout must not count.
	const timeout = 250 * time.Millisecond
	events := []string{textChunk("One."), textChunk(" Two."), textChunk(" Three."), "[DONE]"}
	tests := []struct {
		name       string
		stallAfter int
		emitFor    time.Duration
		wantText   string
		wantErr    error
	}{
		{name: "slow emit is not cut", emitFor: 3 * timeout, wantText: "One. Two. Three."},
		{name: "stall mid-stream is cut", stallAfter: 1, wantText: "One.", wantErr: ErrTimeout},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeChat{events: events, stallAfter: tc.stallAfter}
			srv := httptest.NewServer(f)
			defer srv.Close()
			m, _ := NewOpenAI(OpenAIConfig{URL: srv.URL + "/v1", Model: "m", Timeout: timeout})
			var text strings.Builder
			reply, err := m.Answer(context.Background(), Request{}, func(d Delta) error {
				text.WriteString(d.Text)
				time.Sleep(tc.emitFor) // the reply speaking this piece
				return nil
			})
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if text.String() != tc.wantText || reply.Text != tc.wantText {
				t.Fatalf("emitted %q, reply %q, want %q", text.String(), reply.Text, tc.wantText)
			}
		})
	}
}

func TestOpenAICallerCancel(t *testing.T) {
	f := &fakeChat{hold: make(chan struct{}), got: make(chan chatRequestSeen, 1)}
	defer close(f.hold)
	m := newFake(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-f.got; cancel() }()
	_, err := m.Answer(ctx, Request{}, func(Delta) error { return nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled (a barge-in is not a mind failure)", err)
	}
	var me *Error
	if errors.As(err, &me) {
		t.Fatalf("a caller's cancel became a mind error: %v", err)
	}
}

func TestOpenAIToolChoice(t *testing.T) {
	tests := map[string]struct {
		choice string
		want   string
	}{
		"auto omitted": {"auto", "<nil>"},
		"none":         {"none", "none"},
		"named":        {"weather", "map[function:map[name:weather] type:function]"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := &fakeChat{events: []string{"[DONE]"}, got: make(chan chatRequestSeen, 1)}
			m := newFake(t, f)
			collect(t, m, Request{Tools: []Tool{{Name: "weather"}}, ToolChoice: tc.choice})
			if got := fmt.Sprint((<-f.got).body["tool_choice"]); got != tc.want {
				t.Errorf("tool_choice = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestEcho(t *testing.T) {
	tests := map[string]struct {
		history []Message
		want    string
	}{
		"user text":   {[]Message{{Role: RoleUser, Text: "hello world"}}, "You said: hello world."},
		"punctuated":  {[]Message{{Role: RoleUser, Text: "is it?"}}, "You said: is it?"},
		"nothing":     {nil, "I heard nothing."},
		"tool output": {[]Message{{Role: RoleUser, Text: "x"}, {Role: RoleTool, CallID: "c", Text: "42"}}, "The tool returned: 42"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			deltas, reply, err := collect(t, Echo{}, Request{History: tc.history})
			if err != nil || reply.Text != tc.want {
				t.Fatalf("reply = %q, %v; want %q", reply.Text, err, tc.want)
			}
			var joined strings.Builder
			for _, d := range deltas {
				joined.WriteString(d.Text)
			}
			if joined.String() != tc.want || len(deltas) < 2 {
				t.Errorf("streamed %q in %d deltas", joined.String(), len(deltas))
			}
		})
	}
}

func TestSSEReader(t *testing.T) {
	in := ": keep-alive\r\n\r\nevent: x\ndata: a\ndata: b\n\ndata:c\n\n\ndata: tail"
	r := newSSEReader(strings.NewReader(in))
	var got []string
	for {
		d, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, d)
	}
	if fmt.Sprint(got) != "[a\nb c tail]" {
		t.Fatalf("events = %q", got)
	}
}

func FuzzSSEChunks(f *testing.F) {
	f.Add([]byte("data: " + textChunk("hi") + "\n\ndata: [DONE]\n\n"))
	f.Add([]byte("data: " + callChunk(0, "c", "n", "{") + "\n\n"))
	f.Add([]byte(": x\n\ndata: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":-1}]}}]}\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := newSSEReader(strings.NewReader(string(b)))
		var asm assembler
		for range 1000 {
			data, err := r.Next()
			if err != nil {
				return
			}
			deltas, err := decodeChunk([]byte(data), &asm)
			if err != nil {
				var me *Error
				if !errors.As(err, &me) {
					t.Fatalf("untyped error %v", err)
				}
				continue
			}
			for _, d := range deltas {
				asm.add(d)
			}
		}
		asm.reply()
	})
}
