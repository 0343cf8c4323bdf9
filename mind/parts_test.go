package mind

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/voiced/voiced/audio"
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

// An audio part goes out as chat completions' input_audio part (openai-node's
// ChatCompletionContentPartInputAudio): base64 WAV, 16-bit mono at the part's rate, whose
// samples are the part's within 16-bit rounding; the echo says how long it heard.
func TestAudioPart(t *testing.T) {
	samples := make([]float32, 8000)
	for i := range samples {
		samples[i] = float32(i%200-100) / 200
	}
	h := []Message{{Role: RoleUser, Parts: []Part{AudioPart(samples, 16000)}}}
	o, _ := NewOpenAI(OpenAIConfig{URL: "http://x/v1", Model: "m"})
	b, _ := json.Marshal(o.chatRequest(Request{History: h}))
	var cr struct {
		Messages []struct {
			Content []struct {
				Type       string `json:"type"`
				InputAudio struct {
					Data   string `json:"data"`
					Format string `json:"format"`
				} `json:"input_audio"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(b, &cr); err != nil || len(cr.Messages) != 1 || len(cr.Messages[0].Content) != 1 {
		t.Fatalf("%v %s", err, b)
	}
	p := cr.Messages[0].Content[0]
	if p.Type != "input_audio" || p.InputAudio.Format != "wav" {
		t.Fatalf("part %+v", p)
	}
	wav, err := base64.StdEncoding.DecodeString(p.InputAudio.Data)
	if err != nil {
		t.Fatal(err)
	}
	got, rate, err := audio.DecodeWAVBytes(wav)
	if err != nil || rate != 16000 || len(got) != len(samples) {
		t.Fatalf("wav: %v rate %d, %d samples", err, rate, len(got))
	}
	for i := range got {
		if d := got[i] - samples[i]; d > 1.0/16384 || d < -1.0/16384 {
			t.Fatalf("sample %d: %v, sent %v", i, got[i], samples[i])
		}
	}
	r, _ := Echo{}.Answer(context.Background(), Request{History: h}, func(Delta) error { return nil })
	if r.Text != "I heard 0.5 seconds of your voice." {
		t.Errorf("echo %q", r.Text)
	}
}

// A server that refuses a request with audio is ErrAudioRefused, one with images only
// ErrImagesRefused, anything else ErrUnavailable.
func TestRefusedAudioNamed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":{"message":"no"}}`)
	}))
	defer srv.Close()
	o, _ := NewOpenAI(OpenAIConfig{URL: srv.URL, Model: "m"})
	for name, c := range map[string]struct {
		parts []Part
		want  error
	}{
		"audio":  {[]Part{AudioPart([]float32{0, 0.1}, 16000), ImagePart("data:image/png;base64,AA==", "")}, ErrAudioRefused},
		"images": {[]Part{ImagePart("data:image/png;base64,AA==", "")}, ErrImagesRefused},
		"text":   {[]Part{TextPart("hi")}, ErrUnavailable},
	} {
		_, err := o.Answer(context.Background(), Request{History: []Message{{Role: RoleUser, Parts: c.parts}}}, func(Delta) error { return nil })
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
}
