package session

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voiced/voiced/mind"
)

// streamChat streams text chunks as an OpenAI-compatible server does, gap apart; with
// stallAfter > 0 it goes quiet after that many chunks until the request ends.
type streamChat struct {
	chunks     []string
	gap        time.Duration
	stallAfter int
}

func (f streamChat) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	for i, text := range f.chunks {
		if f.stallAfter > 0 && i == f.stallAfter {
			<-r.Context().Done()
			return
		}
		if i > 0 {
			time.Sleep(f.gap) // a model producing tokens
		}
		b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": text}}}})
		fmt.Fprintf(w, "data: %s\n\n", b)
		w.(http.Flusher).Flush()
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// slowVoice takes d to synthesize each piece (a long reply that is slow to speak).
type slowVoice struct{ d time.Duration }

func (v slowVoice) Speak(ctx context.Context, text, voice string, speed float64, emit func([]int16) error) error {
	select {
	case <-time.After(v.d):
	case <-ctx.Done():
		return ctx.Err()
	}
	return fakeVoice{}.Speak(ctx, text, voice, speed, emit)
}

// TestMindTimeoutBoundsSilenceNotSpeech: --mind-timeout bounds the mind's silence (first token,
// stalls), not the reply: a long answer slower to speak than the timeout is spoken whole, and a
// mind that stalls mid-stream is cut with the mind's error event.
func TestMindTimeoutBoundsSilenceNotSpeech(t *testing.T) {
	// The whole answer takes longer to stream than the timeout, and far longer to speak.
	const timeout, gap = 100 * time.Millisecond, 25 * time.Millisecond
	sentences := []string{"One is first.", " Two comes next.", " Three is here.", " Four ends it.", " Five is late.", " Six is last."}
	tests := []struct {
		name       string
		stallAfter int
		wantStatus string
		wantText   string
	}{
		{name: "slow speech is not cut", wantStatus: "completed", wantText: strings.Join(sentences, "")},
		{name: "stalled mind is cut", stallAfter: 2, wantStatus: "failed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			leakCheck(t)
			chatSrv := httptest.NewServer(streamChat{chunks: sentences, gap: gap, stallAfter: tc.stallAfter})
			defer chatSrv.Close()
			m, err := mind.NewOpenAI(mind.OpenAIConfig{URL: chatSrv.URL + "/v1", Model: "tiny", Timeout: timeout})
			if err != nil {
				t.Fatal(err)
			}
			ts := newTestServer(t, Config{Engines: Engines{Mind: m, Voice: slowVoice{d: 3 * timeout}}})
			c := ts.open(t)
			c.send(map[string]any{"type": "response.create"})
			evs := c.until("response.done")
			done := evs[len(evs)-1]["response"].(map[string]any)
			if done["status"] != tc.wantStatus {
				t.Fatalf("status %v, want %s (%v)", done["status"], tc.wantStatus, types(evs))
			}
			var errEv map[string]any
			for _, ev := range evs {
				if ev["type"] == "error" {
					errEv = ev["error"].(map[string]any)
				}
			}
			if tc.wantStatus == "failed" {
				if errEv == nil || !strings.Contains(errEv["message"].(string), "mind") {
					t.Fatalf("no mind error event before response.done: %v", types(evs))
				}
			} else {
				if errEv != nil {
					t.Fatalf("error %v", errEv)
				}
				tr := done["output"].([]any)[0].(map[string]any)["content"].([]any)[0].(map[string]any)["transcript"]
				if tr != tc.wantText {
					t.Fatalf("transcript %q, want %q", tr, tc.wantText)
				}
			}
			c.conn.Close(websocket.StatusNormalClosure, "")
		})
	}
}

// TestVoiceFixedOnceAudioIsPresent: like OpenAI, the voice may change until the conversation
// holds assistant audio, then a change is invalid_value and the session lives on.
func TestVoiceFixedOnceAudioIsPresent(t *testing.T) {
	leakCheck(t)
	ts := newTestServer(t, Config{Engines: Engines{Voice: fakeVoice{}}})
	c := ts.open(t)
	voice := func(v string) map[string]any {
		return map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime",
			"audio": map[string]any{"output": map[string]any{"voice": v}}}}
	}
	c.send(voice("ash"))
	if got := c.expect("session.updated")[0]["session"].(map[string]any)["audio"].(map[string]any)["output"].(map[string]any)["voice"]; got != "ash" {
		t.Fatalf("voice %v, want ash", got)
	}
	c.send(map[string]any{"type": "conversation.item.create", "item": map[string]any{"type": "message", "role": "user",
		"content": []any{map[string]any{"type": "input_text", "text": "Hello there."}}}})
	c.expect("conversation.item.added", "conversation.item.done")
	c.send(map[string]any{"type": "response.create"})
	c.until("response.done")

	c.send(voice("verse"))
	e := c.expectError("invalid_value")
	if e["param"] != "session.audio.output.voice" || e["message"] != "Cannot update a conversation's voice if assistant audio is present." {
		t.Fatalf("error %v", e)
	}
	c.send(voice("ash")) // the same voice is no change
	c.expect("session.updated")
	c.send(map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime", "instructions": "Be brief."}})
	c.expect("session.updated")
	c.conn.Close(websocket.StatusNormalClosure, "")
}
