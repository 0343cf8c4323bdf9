package session

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/voiced/voiced/internal/testkit"
	"github.com/voiced/voiced/wire"
)

// TestItemBytes: every byte an item keeps counts toward Config.ConversationBytes (issue 18 item 2: only
// text counted, so ids, call_ids and the audio of an input_audio part with a transcript did not).
func TestItemBytes(t *testing.T) {
	tr := "transcript"
	tests := map[string]struct {
		item      wire.Item
		withAudio bool
		want      int
	}{
		"empty":     {wire.Item{}, true, itemOverhead},
		"ids":       {wire.Item{ID: "item_1", CallID: "call_12"}, true, itemOverhead + 6 + 7},
		"call":      {wire.Item{Name: "lookup", Arguments: `{"a":1}`}, true, itemOverhead + 6 + 7},
		"output":    {wire.Item{Output: "42"}, true, itemOverhead + 2},
		"text part": {wire.Item{Content: []wire.ContentPart{{Text: "hello"}}}, true, itemOverhead + partOverhead + 5},
		"audio with a transcript": {wire.Item{Content: []wire.ContentPart{{Audio: make([]byte, 1000), Transcript: &tr}}},
			true, itemOverhead + partOverhead + 1000 + len(tr)},
		"audio not counted": {wire.Item{Content: []wire.ContentPart{{Audio: make([]byte, 1000), Transcript: &tr}}},
			false, itemOverhead + partOverhead + len(tr)},
		"image":       {wire.Item{Content: []wire.ContentPart{{ImageURL: "data:x", Detail: "low"}}}, true, itemOverhead + partOverhead + 6 + 3},
		"empty parts": {wire.Item{Content: make([]wire.ContentPart, 1000)}, true, itemOverhead + 1000*partOverhead},
	}
	for name, tc := range tests {
		if got := itemBytes(tc.item, tc.withAudio); got != tc.want {
			t.Errorf("%s: %d bytes, want %d", name, got, tc.want)
		}
	}
}

// TestItemOverhead: the overheads counted per item and per part are at least what they cost.
func TestItemOverhead(t *testing.T) {
	// The id map's slot: a key and a value, twice over for the map's spare room.
	mapSlot := 2 * (unsafe.Sizeof("") + unsafe.Sizeof(&entry{}))
	if need := unsafe.Sizeof(entry{}) + unsafe.Sizeof(&entry{}) + mapSlot; uintptr(itemOverhead) < need {
		t.Errorf("itemOverhead %d < %d (an entry, its slot and its slot in the id map)", itemOverhead, need)
	}
	if need := unsafe.Sizeof(wire.ContentPart{}); uintptr(partOverhead) < need {
		t.Errorf("partOverhead %d < %d", partOverhead, need)
	}
}

// TestResponseInputCounted: a response's own input items are kept while it runs, so they count
// toward the conversation's bytes until it ends: with 1 MiB to hold, two running out-of-band
// responses with 400 KiB of input each leave no room for a third, nor for a 400 KiB item; once
// they end there is room again.
// (Before, nothing counted them: all three ran.)
func TestResponseInputCounted(t *testing.T) {
	testkit.CheckLeaks(t)
	gate := make(chan struct{})
	ts := newTestServer(t, Config{ConversationBytes: 1 << 20, Engines: Engines{Voice: fakeVoice{gate: gate}}})
	c := ts.open(t)
	big := strings.Repeat("x", 400<<10)
	oob := func(id string) map[string]any {
		return map[string]any{"type": "response.create", "event_id": id, "response": map[string]any{"conversation": "none",
			"input": []any{
				map[string]any{"type": "message", "role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": big}}},
				map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "hi"}}},
			}}}
	}
	item := map[string]any{"type": "conversation.item.create", "event_id": "evt_item", "item": map[string]any{"type": "message", "role": "user",
		"content": []any{map[string]any{"type": "input_text", "text": big}}}}
	c.send(oob("evt_1"))
	c.until("response.created")
	c.send(oob("evt_2"))
	c.until("response.created")
	c.send(oob("evt_3"))
	evs := c.until("error")
	if e := evs[len(evs)-1]["error"].(map[string]any); e["code"] != codeConversationTooLarge || e["param"] != "response.input" || e["event_id"] != "evt_3" {
		t.Fatalf("third response: %v, want %s param response.input", e, codeConversationTooLarge)
	}
	c.send(item)
	evs = c.until("error")
	if e := evs[len(evs)-1]["error"].(map[string]any); e["code"] != codeConversationTooLarge || e["param"] != "item" || e["event_id"] != "evt_item" {
		t.Fatalf("item: %v, want %s param item", e, codeConversationTooLarge)
	}
	close(gate)
	c.until("response.done")
	c.until("response.done")
	c.send(oob("evt_4")) // room again
	c.until("response.done")
}

// TestHeldFollowsTheItems: what the conversation counts toward Config.ConversationBytes is what
// its items keep: an item is counted as it is added, recounted as the conversation writes it
// (a transcript, a reply's text), given back when deleted; an entry not in the conversation (a
// deleted one, an out-of-band reply's) is never counted.
func TestHeldFollowsTheItems(t *testing.T) {
	h := &history{}
	e := &entry{item: wire.Item{ID: "item_a", Type: wire.ItemMessage, Content: []wire.ContentPart{{Type: wire.InputAudio}}}}
	h.add(e, "")
	if want := itemBytes(e.item, false); h.held != want {
		t.Fatalf("added: %d held, want %d", h.held, want)
	}
	tr := strings.Repeat("t", 1000)
	e.item.Content[0].Transcript = &tr
	h.recount(e)
	if want := itemBytes(e.item, false); h.held != want {
		t.Fatalf("transcribed: %d held, want %d", h.held, want)
	}
	outside := &entry{item: wire.Item{ID: "item_oob", Type: wire.ItemMessage}}
	h.recount(outside)
	h.delete("item_a")
	longer := tr + tr
	e.item.Content[0].Transcript = &longer // a transcript landing after the delete
	h.recount(e)
	if h.held != 0 {
		t.Fatalf("deleted, and an entry never added: %d held, want 0", h.held)
	}
}
