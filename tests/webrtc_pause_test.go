package tests

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/voiced/voiced/rtc"
)

// TestWebRTCPausedReplyResumes (issue 22, WebRTC): under voiced.interruption, a question spoken
// over a reply that is too short to interrupt it (min_duration_ms 4000) pauses the reply on the
// track — the server's silence tail in mid-reply, no output_audio_buffer.stopped — and the reply
// resumes where it paused: no speech_started, no cleared, no truncation, response.done
// completed, one started and one stopped for the whole reply. Without the pause the track's 2 s
// queue plays out while the speech is judged and drains (a stopped mid-reply, no tail).
func TestWebRTCPausedReplyResumes(t *testing.T) {
	checkLeaks(t)
	needFlag(t, "jwt-secret-file", "webrtc")
	s := startRealtime(t, serverOpts{})
	question := espeakSpeech(t, "What is the weather like today?")
	c := newRTCClient(t)
	c.call(t, s, s.mintGA(t, s.jwt("rtc-pause", "acme")))
	c.until(t, "session.created", 10*time.Second)
	c.dc.SendText(`{"type":"session.update","session":{"type":"realtime","voiced":{"interruption":{"min_duration_ms":4000}}}}`)
	c.until(t, "session.updated", 10*time.Second)

	var long strings.Builder
	for i := 1; i <= 4; i++ {
		fmt.Fprintf(&long, "This is sentence number %d of a long answer. ", i)
	}
	item, _ := json.Marshal(map[string]any{"type": "conversation.item.create", "item": map[string]any{
		"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": long.String()}}}})
	c.dc.SendText(string(item))
	c.dc.SendText(`{"type":"response.create"}`)
	c.until(t, "output_audio_buffer.started", 30*time.Second)

	spoke := make(chan struct{})
	go func() {
		defer close(spoke)
		c.speak(t, append(append(silence24k(0.5), question...), silence24k(1.5)...))
	}()
	defer func() { <-spoke }()
	evs := c.until(t, "output_audio_buffer.stopped", 120*time.Second)
	types := typesOfMaps(evs)
	var done map[string]any
	for _, e := range evs {
		switch e["type"] {
		case "input_audio_buffer.speech_started", "output_audio_buffer.cleared", "conversation.item.truncated", "output_audio_buffer.started":
			t.Errorf("%s during a reply the speech did not interrupt: %v", e["type"], types)
		case "response.done":
			done = e
		}
	}
	if done == nil {
		t.Fatalf("output_audio_buffer.stopped before response.done (the track drained mid-reply): %v", types)
	}
	if st := done["response"].(map[string]any)["status"]; st != "completed" {
		t.Errorf("response.done status %v, want completed", st)
	}
	// On the track: energetic reply packets, the pause's silence tail (quiet), then no packet
	// while paused (an arrival gap, the RTP timeline contiguous), then energetic ones again.
	c.mu.Lock()
	rx := append([]rxPacket(nil), c.rx...)
	c.mu.Unlock()
	first, last := -1, -1
	for i, p := range rx {
		if p.rms >= energetic {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	var gap time.Duration
	gapAt := -1
	for i := first + 1; i <= last && first >= 0; i++ {
		if d := rx[i].at.Sub(rx[i-1].at); d > gap {
			gap, gapAt = d, i
		}
	}
	t.Logf("%d packets, the reply's from %d to %d; the longest arrival gap in it %v at %d", len(rx), first, last, gap, gapAt)
	if gap < 200*time.Millisecond {
		t.Fatalf("no pause on the track in mid-reply (longest gap %v)", gap)
	}
	for i := max(gapAt-rtc.CutTailPackets+1, 0); i < gapAt; i++ {
		if rx[i].rms >= energetic {
			t.Errorf("packet %d before the pause has RMS %.4f: the pause's silence tail is not quiet", i, rx[i].rms)
		}
	}
	s.stop()
}
