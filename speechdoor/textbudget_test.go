package speechdoor

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/internal/testkit"
)

// waitTextHeld waits (bounded) until the speaking doors hold want bytes of the text budget.
func waitTextHeld(t *testing.T, s *speakingServer, want int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for s.svc.TextHeld() != want && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := s.svc.TextHeld(); got != want {
		t.Fatalf("the speaking doors hold %d bytes of text, want %d", got, want)
	}
}

// words is n bytes of unpunctuated text ("word word …"), which a speak stream's splitter holds.
func words(n int) string { return strings.Repeat("word ", n/5+1)[:n] }

// TestTextBudget: the speaking doors share one node-wide budget of client text; text past it is
// refused text_budget_full by name (the socket stays open, HTTP answers 429 + Retry-After), and
// every byte is given back when it is spoken, cancelled or its socket closes.
func TestTextBudget(t *testing.T) {
	testkit.CheckLeaks(t)
	s := newSpeakingServer(t, Config{TextBudget: 1000})

	// A speak stream holds 400 bytes of unpunctuated text in its splitter.
	holder := openSpeak(t, s)
	holder.msg(map[string]any{"type": "start", "split_chars": MaxSplitChars})
	holder.msg(map[string]any{"type": "text", "text": words(400)})
	waitTextHeld(t, s, 400)

	// Another stream's 700 bytes would take the node past 1000: refused, the socket stays open.
	other := openSpeak(t, s)
	other.msg(map[string]any{"type": "text", "text": words(700)})
	other.expectError("text_budget_full")
	other.msg(map[string]any{"type": "flush", "text": "Hello."})
	if text, _, _ := other.spoken(0); text != "Hello." {
		t.Errorf("after the refusal the stream spoke %q, want Hello.", text)
	}

	// /v1/synthesize counts the frame and its string copy: 2 × 300 past the 600 left.
	syn := dial(t, s.wsURL("/v1/synthesize"), nil)
	syn.expect("ready")
	syn.text(words(300) + ".")
	syn.expectError("text_budget_full")
	syn.text("Hello.")
	syn.expect("audio")
	syn.binary()
	syn.expect("utteranceComplete")

	// /v1/audio/speech: 429 with Retry-After, OpenAI's error shape.
	resp := postSpeech(t, s, fmt.Sprintf(`{"input":%q}`, words(700)))
	var body struct{ Error door.OpenAIError }
	json.NewDecoder(resp.Body).Decode(&body)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" ||
		body.Error.Code != "text_budget_full" || body.Error.Param == nil || *body.Error.Param != "input" {
		t.Errorf("speech past the budget: %d Retry-After %q %+v, want 429 text_budget_full on input",
			resp.StatusCode, resp.Header.Get("Retry-After"), body.Error)
	}

	// cancel gives the holder's buffered text back.
	holder.msg(map[string]any{"type": "cancel"})
	holder.expect("cancelled")
	waitTextHeld(t, s, 0)

	// Sockets that close holding text, buffered or mid-utterance, give it all back.
	open := s.svc.Sockets.Open() // the holder, other and syn stay open
	for i := 0; i < 20; i++ {
		c := openSpeak(t, s)
		c.msg(map[string]any{"type": "start", "split_chars": MaxSplitChars})
		c.msg(map[string]any{"type": "text", "text": words(30)})
		c.msg(map[string]any{"type": "text", "text": "Hello. Read the test. " + words(20)})
		c.conn.CloseNow()
		d := dial(t, s.wsURL("/v1/synthesize"), nil)
		d.expect("ready")
		d.text("Hello. Read the test. Hello.")
		d.conn.CloseNow()
	}
	// Every one of those sockets' handlers has ended: a frame the server reads after a close
	// (still in its socket buffer) would otherwise take budget after the wait below saw 0.
	deadline := time.Now().Add(10 * time.Second)
	for s.svc.Sockets.Open() > open && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := s.svc.Sockets.Open(); n > open {
		t.Fatalf("%d door sockets open after their clients closed, want %d", n, open)
	}
	waitTextHeld(t, s, 0)

	// The whole budget is there again: 1000 bytes fit at once.
	full := openSpeak(t, s)
	full.msg(map[string]any{"type": "start", "split_chars": MaxSplitChars})
	full.msg(map[string]any{"type": "text", "text": words(1000)})
	waitTextHeld(t, s, 1000)
	full.conn.CloseNow()
	waitTextHeld(t, s, 0)
}
