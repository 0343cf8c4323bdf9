package tests

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// longReplyGrowthMiB bounds a conversation answering 240 KB of unpunctuated text: the item and
// the reply's transcript (240 KB each, a few copies), the pieces in the reply's pipeline
// (pipeDepth of 200 characters), one piece's audio and the events queued for the socket (256),
// the reply audio kept for retrieve (at most 5 min, 14 MB), with room for the collector. A reply
// spoken as one piece would be ~1 GB of audio at the fixture's 80 ms a phoneme.
const longReplyGrowthMiB = 128

// TestFaultsRealtimeLongReply (issue 18 item 4, the realtime door): a mind that answers 240 KB of
// text without a sentence end is spoken in parts, each piece's audio streamed as it is made,
// within longReplyGrowthMiB. Two minds: the echo mind (a 240 KB text item, echoed word by word)
// and an OpenAI-compatible one over loopback that streams the whole answer as ONE delta whose
// second sentence is the 240 KB (a complete sentence after the first in one push: the case
// sentence.Splitter's Batch must cut, else it is one piece of 240 KB).
func TestFaultsRealtimeLongReply(t *testing.T) {
	text := strings.TrimSpace(strings.Repeat("hello world ", 20000))
	llm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, delta := range []map[string]any{{"role": "assistant", "content": "Sure. " + text + ". That is all."}, {}} {
			finish := any(nil)
			if len(delta) == 0 {
				finish = "stop"
			}
			b, _ := json.Marshal(map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "fake",
				"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
			fmt.Fprintf(w, "data: %s\n\n", b)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer llm.Close()

	for _, tc := range []struct {
		name string
		args []string
		item string
	}{
		{"echo mind", nil, text},
		{"one 240 KB delta", []string{"--mind-url", llm.URL + "/v1", "--mind-model", "fake-model"}, "Say it all."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.args != nil {
				needFlag(t, "mind-url", "mind-model")
			}
			s := startRealtime(t, serverOpts{Args: tc.args})
			c := s.dialRealtime(t, s.jwt("long-reply-"+randHex(4), ""), true)
			c.until("session.created", nil)
			c.send(betaSessionUpdate(nil))
			c.until("session.updated", nil)
			done := s.memoryGuard(t, longReplyGrowthMiB)
			c.send(textItem(tc.item))
			c.send(map[string]any{"type": "response.create"})
			// Read well into the reply: several pieces, each with its audio, then cancel.
			const wantPieces, wantAudio = 6, 150
			pieces, deltas, longest := 0, 0, 0
			for pieces < wantPieces || deltas < wantAudio {
				ev, ok := c.next(60 * time.Second)
				if !ok {
					done()
					t.Fatalf("the socket ended after %d pieces and %d audio deltas", pieces, deltas)
				}
				switch ev.Type {
				case "error", "response.done":
					done()
					t.Fatalf("%s after %d pieces (the longest %d characters): %.300s", ev.Type, pieces, longest, ev.Raw)
				case "response.audio_transcript.delta":
					pieces++
					longest = max(longest, utf8.RuneCountInString(ev.str("delta")))
				case "response.audio.delta":
					deltas++
				}
			}
			c.send(map[string]any{"type": "response.cancel"})
			evs := c.until("response.done", nil)
			growth := done()
			if st := evs[len(evs)-1].str("response", "status"); st != "cancelled" {
				t.Errorf("response.done %q after response.cancel, want cancelled", st)
			}
			if longest > 4*200+1 {
				t.Errorf("a piece of %d characters: the reply was not cut", longest)
			}
			t.Logf("%s: %d pieces (the longest %d characters) and %d audio deltas read; server peak +%d MiB", tc.name, pieces, longest, deltas, growth)
		})
	}
}
