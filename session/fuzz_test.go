package session

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/voiced/voiced/wire"
)

func FuzzCutWords(f *testing.F) {
	f.Add("You said: tell me a story.", 0.5)
	f.Add("héllo wörld ünïcode", 0.33)
	f.Add("", 1.0)
	f.Fuzz(func(t *testing.T, text string, frac float64) {
		if !utf8.ValidString(text) {
			return
		}
		got := cutWords(text, frac)
		if !strings.HasPrefix(text, got) || !utf8.ValidString(got) {
			t.Fatalf("cutWords(%q, %v) = %q: not a prefix", text, frac, got)
		}
	})
}

// FuzzConversationEvents drives one conversation through the engine's Transport seam (no socket:
// a fake transport records the events) with arbitrary client frames, one per line: nothing may
// panic, deadlock or leak.
func FuzzConversationEvents(f *testing.F) {
	f.Add(`{"type":"session.update","session":{"turn_detection":null,"input_audio_format":"g711_ulaw"}}
{"type":"input_audio_buffer.append","audio":"AAAAAAAAAAAA"}
{"type":"input_audio_buffer.commit"}
{"type":"response.create"}
{"type":"response.cancel"}`)
	f.Add(`{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}}
{"type":"response.create","response":{"conversation":"none"}}
{"type":"conversation.item.truncate","item_id":"x","content_index":0,"audio_end_ms":5}
{"type":"conversation.item.delete","item_id":"x"}`)
	f.Add(`{"type":"conversation.item.create","previous_item_id":"root","item":{"type":"function_call_output","call_id":"c","output":"1"}}
{"type":"input_audio_buffer.clear"}
{"type":"conversation.item.retrieve","item_id":"item_x"}`)
	s, err := New(Config{Engines: Engines{Ears: fakeEars{"words"}, Voice: fakeVoice{}, NewTurnDetector: newEnergyDetector}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, frames string) {
		tr := newFakeTransport(t, Media{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.Converse(context.Background(), tr, Grant{Principal: Principal{Subject: "fuzz"}}, wire.GA, "m")
		}()
		for i, line := range strings.Split(frames, "\n") {
			if i >= 64 {
				break
			}
			select {
			case tr.in <- Inbound{Event: []byte(line)}:
			case <-done: // the engine ended the conversation
			}
		}
		close(tr.in)
		<-done
	})
}
