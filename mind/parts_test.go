package mind

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func TestEchoMaxTokensAndImages(t *testing.T) {
	h := []Message{{Role: RoleUser, Text: "look at this", Parts: []Part{TextPart("look at this"), ImagePart("data:image/png;base64,AA==", "")}}}
	r, err := Echo{}.Answer(context.Background(), Request{History: h}, func(Delta) error { return nil })
	if err != nil || r.Text != "You said: look at this. You showed me an image." || r.Stop != "" {
		t.Fatalf("%q %q %v", r.Text, r.Stop, err)
	}
	r, _ = Echo{}.Answer(context.Background(), Request{History: h, MaxOutputTokens: 3}, func(Delta) error { return nil })
	if r.Text != "You said: look " || r.Stop != StopMaxTokens {
		t.Fatalf("cut: %q %q", r.Text, r.Stop)
	}
}

// The chat request carries image parts as content arrays, text-only messages as strings, and the
// model parameters; the stream's finish_reason and usage chunk reach the Reply.
func TestOpenAIPartsParamsUsage(t *testing.T) {
	o, _ := NewOpenAI(OpenAIConfig{URL: "http://x/v1", Model: "m"})
	no := false
	cr := o.chatRequest(Request{Temperature: 0.9, MaxOutputTokens: 12, ParallelToolCalls: &no, Tools: []Tool{{Name: "f"}},
		History: []Message{{Role: RoleUser, Text: "hi"}, {Role: RoleUser, Text: "see", Parts: []Part{TextPart("see"), ImagePart("https://e/x.png", "high")}}}})
	b, _ := json.Marshal(cr)
	for _, want := range []string{`"temperature":0.9`, `"max_tokens":12`, `"parallel_tool_calls":false`, `"stream_options":{"include_usage":true}`,
		`{"role":"user","content":"hi"}`, `"content":[{"type":"text","text":"see"},{"type":"image_url","image_url":{"url":"https://e/x.png","detail":"high"}}]`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("request lacks %s:\n%s", want, b)
		}
	}
	var asm assembler
	for _, c := range []string{`{"choices":[{"delta":{"content":"a"},"finish_reason":null}]}`, `{"choices":[{"delta":{},"finish_reason":"length"}]}`,
		`{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":8}}}`} {
		ds, err := decodeChunk([]byte(c), &asm)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			asm.add(d)
		}
	}
	r := asm.reply()
	if r.Text != "a" || r.Stop != StopMaxTokens || r.Usage == nil || *r.Usage != (Usage{InputTokens: 10, OutputTokens: 2, CachedTokens: 8}) {
		t.Fatalf("%+v %+v", r, r.Usage)
	}
}
