package session

import (
	"fmt"
	"strings"
	"testing"

	"github.com/voiced/voiced/wire"
)

// TestWindowCountsSenses (issues 23, 27): the frames and audio the newest turn carries to the
// mind count against the window's budget, so a history that fits on its words alone loses its
// oldest turns once the turn shows two frames and ten seconds of audio.
func TestWindowCountsSenses(t *testing.T) {
	h := &history{}
	text := strings.Repeat("w", 400) // 100 tokens + 4 of framing a message
	for i := range 10 {
		role := wire.RoleUser
		if i%2 == 1 {
			role = wire.RoleAssistant
		}
		h.add(&entry{item: wire.Item{ID: fmt.Sprintf("item_%d", i), Type: wire.ItemMessage, Role: role,
			Content: []wire.ContentPart{{Type: wire.InputText, Text: text}}}}, "")
	}
	items := h.snapshot(nil)
	const budget = 1100 // the ten messages: 1040 tokens
	sense := h.senseFunc(SensesConfig{MindAudio: MindAudioBeside, MindAudioRate: 16000})
	if got := lessSenses(budget, items, sense); got != budget {
		t.Fatalf("no senses: budget %d, want %d", got, budget)
	}
	var w mindWindow
	if got := w.view(items, wire.Truncation{Type: wire.TruncationAuto}, lessSenses(budget, items, sense)); len(got) != 10 {
		t.Fatalf("words alone: %d items shown, want 10", len(got))
	}

	h.byID["item_8"].sense = &sensed{frames: []string{"data:image/png;base64,AA==", "data:image/png;base64,AA=="},
		heard: make([]float32, 10*16000)}
	want := budget - 2*imageTokensOther - 10*audioTokensPerSecond
	if got := lessSenses(budget, items, sense); got != max(want, 1) {
		t.Fatalf("two frames and 10 s: budget %d, want %d", got, max(want, 1))
	}
	var w2 mindWindow
	got := w2.view(items, wire.Truncation{Type: wire.TruncationAuto}, lessSenses(budget, items, sense))
	if len(got) == 10 || got[len(got)-1].ID != "item_9" {
		t.Fatalf("with senses: %d items shown (last %s), want the oldest dropped and the newest kept", len(got), got[len(got)-1].ID)
	}
	if lessSenses(0, nil, nil) != DefaultMindContextTokens {
		t.Fatal("budget 0 is not the default")
	}
}
