package tests

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestFaultsItemBytes (issue 18 item 2): the per-conversation cap counted only text, so 60
// conversation.item.create with a 4 MiB item.id were all kept (RSS +440 MB on one socket), and
// call_id, and input_audio carrying a transcript (its audio never heard, so never counted), got
// past it the same way. Each flood is sent on its own socket of one server: ids are refused by
// name at decode (string_above_max_length, param naming the field, the event's own event_id not
// echoed when it is the one too long), audio is counted toward the conversation's bytes
// (conversation_too_large once 32 MiB are held), the server's RSS stays bounded, and the socket
// answers a text turn after.
func TestFaultsItemBytes(t *testing.T) {
	checkLeaks(t)
	// The byte budget off (60 events of 4 MiB are 15 times its burst): this test proves the
	// conversation's cap; TestFaultsEventBytes proves the budget.
	s := startRealtime(t, serverOpts{Args: []string{"--event-bytes", "0"}})
	const n = 60
	big := strings.Repeat("x", 4<<20)
	audio := base64.StdEncoding.EncodeToString(make([]byte, 4<<20)) // 4 MiB of pcm16 silence (87 s)
	user := func(id string) map[string]any {
		return map[string]any{"type": "message", "role": "user", "id": id,
			"content": []any{map[string]any{"type": "input_text", "text": "hi"}}}
	}
	tests := []struct {
		name  string
		event func(i int) map[string]any
		// code and param of the refusals; minRefused of the n must be refused
		code, param string
		minRefused  int
		echoID      bool // the refusal names the event's event_id
	}{
		{name: "item.id", code: "string_above_max_length", param: "item.id", minRefused: n, echoID: true,
			event: func(i int) map[string]any {
				return map[string]any{"type": "conversation.item.create", "event_id": fmt.Sprint("evt_", i), "item": user(big)}
			}},
		{name: "call_id", code: "string_above_max_length", param: "item.call_id", minRefused: n, echoID: true,
			event: func(i int) map[string]any {
				return map[string]any{"type": "conversation.item.create", "event_id": fmt.Sprint("evt_", i), "item": map[string]any{
					"type": "function_call_output", "call_id": big, "output": "{}"}}
			}},
		{name: "previous_item_id", code: "string_above_max_length", param: "previous_item_id", minRefused: n, echoID: true,
			event: func(i int) map[string]any {
				return map[string]any{"type": "conversation.item.create", "event_id": fmt.Sprint("evt_", i), "previous_item_id": big,
					"item": user("")}
			}},
		{name: "event_id", code: "string_above_max_length", param: "event_id", minRefused: n,
			event: func(i int) map[string]any {
				return map[string]any{"type": "conversation.item.create", "event_id": big, "item": user("")}
			}},
		{name: "input_audio with a transcript", code: "conversation_too_large", param: "item", minRefused: n - 8, echoID: true,
			event: func(i int) map[string]any {
				return map[string]any{"type": "conversation.item.create", "event_id": fmt.Sprint("evt_", i), "item": map[string]any{
					"type": "message", "role": "user",
					"content": []any{map[string]any{"type": "input_audio", "audio": audio, "transcript": "hi"}}}}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := s.dialRealtime(t, s.jwt("faults-item-bytes-"+randHex(4), ""), true)
			c.until("session.created", nil)
			// Before: +440 MiB for the 60 ids. What stays is at most the 32 MiB the conversation may
			// hold; the rest is one 4 MiB event being decoded at a time and the GC's slack.
			done := s.memoryGuard(t, 160)
			added, refused := 0, 0
			var first rtEvent
			for i := range n {
				c.send(tt.event(i))
				for {
					ev, ok := c.next(30 * time.Second)
					if !ok {
						t.Fatalf("the socket ended after %d events", i)
					}
					if ev.Type == "conversation.item.done" {
						continue
					}
					if ev.Type == "conversation.item.created" || ev.Type == "conversation.item.added" {
						added++
						break
					}
					if ev.Type != "error" {
						t.Fatalf("event %d: %s", i, ev.Raw)
					}
					refused++
					if first.Raw == nil {
						first = ev
					}
					wantID := ""
					if tt.echoID {
						wantID = fmt.Sprint("evt_", i)
					}
					if ev.str("error", "type") != "invalid_request_error" || ev.str("error", "code") != tt.code ||
						ev.str("error", "param") != tt.param || ev.str("error", "event_id") != wantID || len(ev.Raw) > 1024 {
						t.Fatalf("refusal %.300s; want invalid_request_error %s, param %s, event_id %q, short", ev.Raw, tt.code, tt.param, wantID)
					}
					break
				}
			}
			growth := done()
			t.Logf("%d events of 4 MiB: %d added, %d refused (first: %.300s); peak RSS +%d MiB",
				n, added, refused, first.Raw, growth)
			if refused < tt.minRefused {
				t.Errorf("%d of %d refused, want at least %d", refused, n, tt.minRefused)
			}
			if errs, _, tr := turnAfter(t, c, "Hello after the flood."); len(errs) != 0 || tr == "" {
				t.Errorf("the text turn after: %d errors (%s), transcript %q", len(errs), firstRaw(errs), tr)
			}
			c.checkStrict()
			c.close()
		})
	}
	s.stop()
}
