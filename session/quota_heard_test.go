package session

import (
	"context"
	"testing"
	"time"

	"github.com/voiced/voiced/internal/testkit"
)

// Heard audio is spent from the quota at its own length: 500 ms on a 1 s budget leaves the
// conversation open, 600 ms more closes it with insufficient_quota (found by make mutate: the
// seconds heard were computed with a wrong operator and no test noticed).
func TestHeardAudioSpendsQuota(t *testing.T) {
	testkit.CheckLeaks(t)
	ts := newTestServer(t, Config{Engines: Engines{Ears: fakeEars{"hi"}, Voice: fakeVoice{}, Meter: &recordingMeter{},
		Budget: func(context.Context, Principal) (time.Duration, bool, error) { return time.Second, true, nil }}})
	c := ts.open(t)
	for range 5 {
		c.send(appendEvent(pcm24(100, false)))
	}
	c.send(map[string]any{"type": "input_audio_buffer.clear"})
	for _, e := range c.until("input_audio_buffer.cleared") {
		if e["type"] == "error" {
			t.Fatalf("500 ms heard on a 1 s budget: %v", e)
		}
	}
	for range 6 {
		c.send(appendEvent(pcm24(100, false)))
	}
	evs := c.until("error")
	if e := evs[len(evs)-1]["error"].(map[string]any); e["code"] != "insufficient_quota" {
		t.Fatalf("1.1 s heard on a 1 s budget: error %v, want insufficient_quota", e)
	}
}
