package session

import (
	"context"
	"sync"
	"testing"

	"github.com/coder/websocket"

	"github.com/voiced/voiced/internal/testkit"
)

// sharedEars records what each transcription was asked as (the decoder's scheduling input).
type sharedEars struct {
	mu       sync.Mutex
	hearings []Hearing
}

func (s *sharedEars) Transcribe(ctx context.Context, pcm []float32) (string, error) {
	return s.TranscribeAs(ctx, pcm, Hearing{})
}

func (s *sharedEars) TranscribeAs(_ context.Context, _ []float32, h Hearing) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hearings = append(s.hearings, h)
	return "hello there", nil
}

// TestSharedEarsHearing: on a shared decoder a conversation's partials are asked as partials and
// its committed turn as a final, all under the conversation's own id (what Whisper's queue is fair
// by); two conversations have two ids.
func TestSharedEarsHearing(t *testing.T) {
	testkit.CheckLeaks(t)
	ears := &sharedEars{}
	ts := newTestServer(t, Config{Engines: Engines{Ears: ears, NewTurnDetector: newEnergyDetector}})
	for range 2 {
		c := ts.open(t)
		c.send(map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime",
			"audio": map[string]any{"input": map[string]any{"transcription": map[string]any{"model": "whisper-1"},
				"turn_detection": map[string]any{"type": "server_vad", "create_response": false}}}}})
		c.expect("session.updated")
		for range 12 {
			c.send(appendEvent(pcm24(100, true)))
		}
		c.until("conversation.item.input_audio_transcription.delta")
		for range 4 {
			c.send(appendEvent(pcm24(100, false)))
		}
		c.until("conversation.item.input_audio_transcription.completed")
		c.conn.Close(websocket.StatusNormalClosure, "")
	}
	ts.http.Close()
	ts.Wait()
	ears.mu.Lock()
	defer ears.mu.Unlock()
	partials, finals := map[string]int{}, map[string]int{}
	for _, h := range ears.hearings {
		if h.Conversation == "" {
			t.Fatalf("a transcription asked without its conversation: %+v", ears.hearings)
		}
		if h.Partial {
			partials[h.Conversation]++
		} else {
			finals[h.Conversation]++
		}
	}
	if len(finals) != 2 || len(partials) != 2 {
		t.Fatalf("finals by conversation %v, partials %v: want two conversations with both", finals, partials)
	}
	for id, n := range finals {
		if n != 1 || partials[id] == 0 {
			t.Fatalf("conversation %s: %d finals and %d partials, want 1 and some", id, n, partials[id])
		}
	}
}
