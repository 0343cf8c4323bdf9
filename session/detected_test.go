package session

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/coder/websocket"

	"github.com/voiced/voiced/internal/testkit"
	"github.com/voiced/voiced/mind"
)

// detectingEars hear Spanish: a final asked with the language open ("" or auto) reports it
// detected, as bridge.Ears does with Whisper's Result.Detected; every hearing is recorded.
type detectingEars struct{ sharedEars }

func (d *detectingEars) TranscribeAs(ctx context.Context, pcm []float32, h Hearing) (string, error) {
	_, err := d.sharedEars.TranscribeAs(ctx, pcm, h)
	if !h.Partial && (h.Language == "" || h.Language == "auto") && h.Detected != nil {
		h.Detected("es")
	}
	return "hola", err
}

// toldMind records the instructions each answer was asked with.
type toldMind struct {
	mu   sync.Mutex
	told []string
}

func (m *toldMind) Answer(ctx context.Context, req mind.Request, emit func(mind.Delta) error) (mind.Reply, error) {
	m.mu.Lock()
	m.told = append(m.told, req.Instructions)
	m.mu.Unlock()
	return mind.Echo{}.Answer(ctx, req, emit)
}

// TestDetectedLanguageReachesTheSession (issue 21): with transcription language auto, the
// language a final was detected in is the completed event's language, the mind is told it, and
// the next turn's partials are asked in it (partials never detect); before any final they are
// asked auto. Removing any of the three wirings fails this test.
func TestDetectedLanguageReachesTheSession(t *testing.T) {
	testkit.CheckLeaks(t)
	ears := &detectingEars{}
	m := &toldMind{}
	ts := newTestServer(t, Config{Engines: Engines{Ears: ears, Mind: m, NewTurnDetector: newEnergyDetector}})
	c := ts.open(t)
	c.send(map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime",
		"audio": map[string]any{"input": map[string]any{"transcription": map[string]any{"model": "whisper-1", "language": "auto"},
			"turn_detection": map[string]any{"type": "server_vad", "create_response": false}}}}})
	c.expect("session.updated")
	turn := func() map[string]any {
		for range 12 {
			c.send(appendEvent(pcm24(100, true)))
		}
		c.until("conversation.item.input_audio_transcription.delta")
		for range 4 {
			c.send(appendEvent(pcm24(100, false)))
		}
		evs := c.until("conversation.item.input_audio_transcription.completed")
		return evs[len(evs)-1]
	}
	first := turn()
	if first["language"] != "es" {
		t.Fatalf("completed event %v: want language es", first)
	}
	c.send(map[string]any{"type": "response.create"})
	c.until("response.done")
	second := turn()
	if second["language"] != "es" {
		t.Fatalf("second completed event %v: want language es", second)
	}
	c.conn.Close(websocket.StatusNormalClosure, "")
	ts.http.Close()
	ts.Wait()

	m.mu.Lock()
	if len(m.told) != 1 || !strings.Contains(m.told[0], "The user speaks Spanish; answer in Spanish.") {
		t.Errorf("the mind was told %q, want the detected Spanish named", m.told)
	}
	m.mu.Unlock()
	ears.mu.Lock()
	defer ears.mu.Unlock()
	var finals int
	var before, after []string // partials' languages before the first final, after it
	for _, h := range ears.hearings {
		switch {
		case !h.Partial:
			finals++
			if h.Language != "auto" {
				t.Errorf("a final asked in %q, want auto (it detects)", h.Language)
			}
		case finals == 0:
			before = append(before, h.Language)
		default:
			after = append(after, h.Language)
		}
	}
	if finals != 2 || len(before) == 0 || len(after) == 0 {
		t.Fatalf("%d finals, partials before %v after %v", finals, before, after)
	}
	for _, l := range before {
		if l != "auto" {
			t.Errorf("a partial before any detection asked in %q, want auto", l)
		}
	}
	// The second turn's partials come after the first final: each is told the detection.
	for _, l := range after[len(after)-1:] {
		if l != "es" {
			t.Errorf("a partial after the detection asked in %q, want es (all: %v)", l, after)
		}
	}
}
