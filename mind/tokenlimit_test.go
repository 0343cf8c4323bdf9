package mind

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"
)

// The output cap goes in the field the operator named: max_tokens (the default),
// max_completion_tokens (OpenAI's reasoning models refuse max_tokens), or both.
func TestOpenAITokenLimitField(t *testing.T) {
	tests := map[string]struct {
		field                  TokenLimitField
		maxTokens, maxComplete any
	}{
		"default":               {"", 42.0, nil},
		"max_tokens":            {TokenLimitMaxTokens, 42.0, nil},
		"max_completion_tokens": {TokenLimitMaxCompletionTokens, nil, 42.0},
		"both":                  {TokenLimitBoth, 42.0, 42.0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := &fakeChat{events: []string{textChunk("ok"), "[DONE]"}, got: make(chan chatRequestSeen, 1)}
			srv := httptest.NewServer(f)
			defer srv.Close()
			m, err := NewOpenAI(OpenAIConfig{URL: srv.URL + "/v1", Model: "o-tiny", Timeout: 5 * time.Second, TokenLimit: tc.field})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m.Answer(context.Background(), Request{MaxOutputTokens: 42}, func(Delta) error { return nil }); err != nil {
				t.Fatal(err)
			}
			body := (<-f.got).body
			if body["max_tokens"] != tc.maxTokens || body["max_completion_tokens"] != tc.maxComplete {
				t.Errorf("max_tokens %v max_completion_tokens %v, want %v %v", body["max_tokens"], body["max_completion_tokens"], tc.maxTokens, tc.maxComplete)
			}
		})
	}
	if _, err := NewOpenAI(OpenAIConfig{URL: "http://x/v1", Model: "m", TokenLimit: "max_output"}); err == nil {
		t.Error("an unknown token limit field was accepted")
	}
}
