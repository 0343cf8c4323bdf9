package session

import (
	"testing"
	"time"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/internal/testkit"
	"github.com/voiced/voiced/turn"
	"github.com/voiced/voiced/wire"
)

// onsetDetector stands in for Hush's onset (turn.Onset): a loud push is an onset, a run of
// confirm loud pushes takes the floor (turn.SpeechStarted), a quiet push before that loses it
// (turn.OnsetLost); 200 ms of quiet ends a turn.
type onsetDetector struct {
	pos, runStart, quiet int64
	run                  int
	speaking             bool
}

const onsetConfirm = 3 // loud 100 ms pushes before the floor is taken

func (f *onsetDetector) Feed(pcm []float32, _ int64) ([]turn.Event, error) {
	var evs []turn.Event
	loud := audio.RMS(pcm) > 0.05
	switch {
	case !f.speaking && loud:
		if f.run == 0 {
			f.runStart = f.pos
			evs = append(evs, turn.Onset{At: f.pos})
		}
		f.run++
		if f.run >= onsetConfirm {
			f.speaking, f.quiet, f.run = true, 0, 0
			evs = append(evs, turn.SpeechStarted{Start: f.runStart})
		}
	case !f.speaking && f.run > 0:
		f.run = 0
		evs = append(evs, turn.OnsetLost{At: f.pos + int64(len(pcm))})
	case f.speaking && !loud:
		f.quiet += int64(len(pcm))
		if f.quiet >= 3200 {
			f.speaking = false
			evs = append(evs, turn.SpeechStopped{End: f.pos + int64(len(pcm))})
		}
	case f.speaking:
		f.quiet = 0
	}
	f.pos += int64(len(pcm))
	return evs, nil
}

func (f *onsetDetector) Floor() turn.Floor {
	if f.speaking {
		return turn.Held
	}
	return turn.Quiet
}

func (f *onsetDetector) Reset()       { f.speaking, f.quiet, f.run = false, 0, 0 }
func (f *onsetDetector) Close() error { return nil }

// onsetReply runs a two-sentence reply under voiced.interruption and, once its first sentence's
// audio arrived, speaks: a blip (one loud push: an onset, then lost), the second sentence made
// ready, 200 ms of quiet (less than the onset's grace) and a wait, then "Stop, wait." (loud until
// the floor is taken) and quiet. It returns the reply's events and the samples its deltas
// carried and the first sentence's.
func onsetReply(t *testing.T) (evs []map[string]any, got, first int) {
	testkit.CheckLeaks(t)
	gate := make(chan struct{}, 2)
	ts := newTestServer(t, Config{Engines: Engines{Ears: fakeEars{"Stop, wait."}, Voice: fakeVoice{gate: gate},
		NewTurnDetector: func(wire.TurnDetection, Partial) (turn.Detector, error) { return &onsetDetector{}, nil }}})
	c := ts.open(t)
	c.send(map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime",
		"voiced": map[string]any{"interruption": map[string]any{"min_duration_ms": 100, "min_words": 1}}}})
	c.until("session.updated")
	c.send(map[string]any{"type": "conversation.item.create", "item": map[string]any{"type": "message", "role": "user",
		"content": []any{map[string]any{"type": "input_text", "text": "Tell me a story. Make it a long one about the sea and its ships."}}}})
	added := c.until("conversation.item.done")
	userItem := added[len(added)-1]["item"].(map[string]any)["id"]
	c.send(map[string]any{"type": "response.create"})
	gate <- struct{}{}
	evs = c.until("response.output_audio.delta")
	c.send(appendEvent(pcm24(100, true))) // the onset: the reply pauses
	c.send(map[string]any{"type": "conversation.item.retrieve", "item_id": userItem})
	evs = append(evs, c.until("conversation.item.retrieved")...) // the onset was heard
	gate <- struct{}{}                                           // the second sentence is ready while paused
	c.send(appendEvent(pcm24(200, false)))                       // the run is lost; the grace is 400 ms
	time.Sleep(300 * time.Millisecond)                           // a writer not held would send the second sentence now
	for range onsetConfirm + 5 {
		c.send(appendEvent(pcm24(100, true)))
	}
	c.send(map[string]any{"type": "conversation.item.retrieve", "item_id": userItem})
	evs = append(evs, c.until("conversation.item.retrieved")...) // a partial of the words was started
	c.send(appendEvent(pcm24(100, true)))
	evs, got, _, first = replyDone(c, evs)
	return evs, got, first
}

// The reply pauses on the speech's first window (turn.Onset), before the speech is a turn, and
// stays paused through a gap shorter than the grace: the second sentence, ready while the
// user's speech had only begun, never goes out, and "Stop, wait." cancels the reply with the
// first sentence's audio alone sent.
func TestOnsetPausesTheReply(t *testing.T) {
	evs, got, first := onsetReply(t)
	if countType(evs, "input_audio_buffer.speech_started") != 1 || doneStatus(evs) != "cancelled" || got != first || first == 0 {
		t.Errorf("%d speech_started, response.done %s, %d samples sent; want 1, cancelled, the first sentence's %d",
			countType(evs, "input_audio_buffer.speech_started"), doneStatus(evs), got, first)
	}
}

// A lost onset resumes the reply once the grace has passed: a blip alone, then quiet, and the
// reply completes with every sample.
func TestLostOnsetResumes(t *testing.T) {
	testkit.CheckLeaks(t)
	gate := make(chan struct{}, 2)
	ts := newTestServer(t, Config{Engines: Engines{Ears: fakeEars{""}, Voice: fakeVoice{gate: gate},
		NewTurnDetector: func(wire.TurnDetection, Partial) (turn.Detector, error) { return &onsetDetector{}, nil }}})
	c := ts.open(t)
	c.send(map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime",
		"voiced": map[string]any{"interruption": map[string]any{"min_duration_ms": 100, "min_words": 1}}}})
	c.until("session.updated")
	c.send(map[string]any{"type": "conversation.item.create", "item": map[string]any{"type": "message", "role": "user",
		"content": []any{map[string]any{"type": "input_text", "text": "Tell me a story. Make it a long one about the sea and its ships."}}}})
	added := c.until("conversation.item.done")
	userItem := added[len(added)-1]["item"].(map[string]any)["id"]
	c.send(map[string]any{"type": "response.create"})
	gate <- struct{}{}
	evs := c.until("response.output_audio.delta")
	c.send(appendEvent(pcm24(100, true)))
	c.send(map[string]any{"type": "conversation.item.retrieve", "item_id": userItem})
	evs = append(evs, c.until("conversation.item.retrieved")...) // the onset was heard: the reply is paused
	gate <- struct{}{}
	evs, got, want, _ := replyDone(c, evs)
	if n := countType(evs, "input_audio_buffer.speech_started"); n != 0 || doneStatus(evs) != "completed" || got != want {
		t.Errorf("a lost onset: %d speech_started, response.done %s, %d of %d samples; want none, completed, all", n, doneStatus(evs), got, want)
	}
}
