package session

import (
	"testing"
	"time"

	"github.com/voiced/voiced/internal/testkit"
)

// With a Player (a WebRTC track) the meter bills the reply audio the player played, not what
// was queued for it: the audio still queued when the peer goes is never billed (issue 18: a
// client killed 3 s into a reply was billed 20.1 s).
func TestEnginePlayerMetersPlayed(t *testing.T) {
	testkit.CheckLeaks(t)
	meter := &recordingMeter{}
	s, err := New(Config{Engines: Engines{Voice: fakeVoice{}, Meter: meter}})
	if err != nil {
		t.Fatal(err)
	}
	player := newFakePlayer()
	tr := newFakeTransport(t, Media{TrackInput: true, Player: player})
	end := converse(t, s, tr)
	tr.until("session.created")
	tr.event(map[string]any{"type": "conversation.item.create", "item": map[string]any{"type": "message", "role": "user",
		"content": []any{map[string]any{"type": "input_text", "text": "tell me a story"}}}})
	tr.until("conversation.item.done")
	tr.event(map[string]any{"type": "response.create"})
	tr.until("response.done")
	player.mu.Lock()
	queued := len(player.queued)
	player.mu.Unlock()
	const played = 1200 // 50 ms of the reply went out; the rest was still queued
	if queued <= 2*played {
		t.Fatalf("the reply queued %d samples, want more than %d", queued, 2*played)
	}
	if _, spoken, _ := meter.total(); spoken != 0 {
		t.Errorf("before anything played: %v spoken metered, want 0", spoken)
	}
	player.advance(played)
	end() // the peer is gone with the rest unplayed
	_, spoken, _ := meter.total()
	if want := time.Duration(played) * time.Second / 24000; spoken < want-time.Millisecond || spoken > want+time.Millisecond {
		t.Errorf("metered %v spoken, want %v (the %d samples played, not the %d queued)", spoken, want, played, queued)
	}
}
