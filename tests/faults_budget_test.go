package tests

import (
	"encoding/base64"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/voiced/voiced/audio"
)

// TestFaultsWhisperBudget (issue 10 item 6): one Whisper serves every conversation. A greedy
// client commits hundreds of tiny chunks (client commits, transcription on) as fast as it can;
// a normal client then commits one utterance. The normal client's transcription must not wait
// behind the greedy one's backlog: it is measured in queue positions (the greedy transcriptions
// that completed between the normal commit and its transcription) and as the ratio of its
// latency to the same commit's without the greedy client. The greedy client's own
// transcriptions are delayed, never lost.
func TestFaultsWhisperBudget(t *testing.T) {
	checkLeaks(t)
	s := startRealtime(t, serverOpts{})
	speech := sileroSpeech(t, "samples.pcm")
	const greedyCommits = 200
	session := betaSessionUpdate(nil)
	session["session"].(map[string]any)["input_audio_transcription"] = map[string]any{"model": "whisper-1"}
	appendOf := func(pcm []int16) map[string]any {
		return map[string]any{"type": "input_audio_buffer.append", "audio": base64.StdEncoding.EncodeToString(audio.Int16ToBytes(pcm))}
	}
	open := func(who string) *rtConn {
		c := s.dialRealtime(t, s.jwt("budget-"+who+"-"+randHex(4), ""), true)
		c.until("session.created", nil)
		c.send(session)
		c.until("session.updated", nil)
		return c
	}
	normal, greedy := open("normal"), open("greedy")

	// normalTurn commits one utterance (1 s of speech) and returns when its transcription came.
	utterance := speech[:min(len(speech), 24000)]
	normalTurn := func() (committed, transcribed time.Time) {
		normal.send(appendOf(utterance))
		committed = time.Now()
		normal.send(map[string]any{"type": "input_audio_buffer.commit"})
		normal.until("conversation.item.input_audio_transcription.completed", nil)
		return committed, time.Now()
	}
	var alone []time.Duration
	for range 3 {
		c, d := normalTurn()
		alone = append(alone, d.Sub(c))
	}
	slices.Sort(alone)
	baseline := alone[1]

	// The greedy client's events are read as they come, each completion timed.
	var mu sync.Mutex
	var greedyDone []time.Time
	var failed int
	var reader sync.WaitGroup
	reader.Go(func() {
		for len(greedyDone)+failed < greedyCommits {
			ev, ok := greedy.next(120 * time.Second)
			if !ok {
				return
			}
			mu.Lock()
			switch ev.Type {
			case "conversation.item.input_audio_transcription.completed":
				greedyDone = append(greedyDone, time.Now())
			case "conversation.item.input_audio_transcription.failed", "error":
				failed++
				t.Logf("greedy client: %s", ev.Raw)
			}
			mu.Unlock()
		}
	})
	chunk := speech[:2400*3/2] // 150 ms: above the 100 ms a commit needs
	greedyStart := time.Now()
	for range greedyCommits {
		greedy.send(appendOf(chunk))
		greedy.send(map[string]any{"type": "input_audio_buffer.commit"})
	}
	sentIn := time.Since(greedyStart)
	committed, transcribed := normalTurn()
	withGreedy := transcribed.Sub(committed)
	reader.Wait()

	mu.Lock()
	defer mu.Unlock()
	if failed != 0 || len(greedyDone) != greedyCommits {
		t.Fatalf("greedy client: %d transcriptions completed, %d failed, want all %d completed (delayed, never lost)",
			len(greedyDone), failed, greedyCommits)
	}
	var positions, before int // greedy transcriptions completed while the normal one waited, and before it
	for _, at := range greedyDone {
		switch {
		case at.Before(committed):
			before++
		case at.Before(transcribed):
			positions++
		}
	}
	drain := greedyDone[len(greedyDone)-1].Sub(greedyStart)
	t.Logf("normal client's transcription: alone %v (median of 3), beside the greedy backlog %v (%.1f× alone); "+
		"it waited behind %d greedy transcriptions (%d of %d were done when it committed; the greedy client sent its "+
		"%d commits in %v and had them all transcribed after %v)",
		baseline.Round(time.Millisecond), withGreedy.Round(time.Millisecond), withGreedy.Seconds()/baseline.Seconds(),
		positions, before, greedyCommits, greedyCommits, sentIn.Round(time.Millisecond), drain.Round(time.Millisecond))
	if backlog := greedyCommits - before; backlog < 20 {
		t.Skipf("the greedy backlog was only %d when the normal client committed: the machine decoded faster than it was sent", backlog)
	}
	// Fair service: one greedy final per normal one, plus the one running. 8 leaves room for
	// what the normal commit's own events take to arrive; a FIFO queue puts it behind ≥ 20.
	if positions > 8 {
		t.Errorf("the normal client's transcription waited behind %d of the greedy client's, want ≤ 8", positions)
	}
	normal.checkStrict()
	greedy.checkStrict()
	normal.close()
	greedy.close()
	s.stop()
}
