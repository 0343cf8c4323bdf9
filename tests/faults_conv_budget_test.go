package tests

import (
	"encoding/base64"
	"fmt"
	"testing"
	"time"

	"github.com/voiced/voiced/audio"
)

// TestFaultsConversationBudget (issue 18): one conversation pushes the input audio buffer as far
// as a client can. The buffer grew until commit: with turn_detection null (the client commits,
// or never does) and under a detector that holds the turn (noise it reads as speech; here real
// speech looped, with a 60 s silence_duration_ms), up to --session-limit (an hour: ~400 MB for
// one conversation), and every committed turn kept its audio for the session. Each phase sends
// 10 min of audio as fast as the server reads it:
//   - client commits, never committing: appends past 2 min are refused by name
//     (input_audio_buffer_full, each naming its event_id), nothing buffered is lost;
//   - server_vad holding the turn: the turn ends at 2 min as if speech stopped (speech_stopped,
//     committed), and committed turns keep the newest 5 min of audio in all.
//
// The server's peak RSS (memoryGuard) must stay within the conversation's budget; the socket
// answers a text turn after.
func TestFaultsConversationBudget(t *testing.T) {
	checkLeaks(t)
	speech := sileroSpeech(t, "samples.pcm")
	s := startRealtime(t, serverOpts{})
	const phase = 10 * time.Minute
	const piece = 10 * 24000 // samples: 10 s appends (640 KB of base64)
	loop := make([]int16, 0, int(phase.Seconds())*24000)
	for len(loop) < cap(loop) {
		loop = append(loop, speech[:min(len(speech), cap(loop)-len(loop))]...)
	}

	c := s.dialRealtime(t, s.jwt("faults-conv-budget-"+randHex(4), ""), true)
	c.until("session.created", nil)
	// Warm up what every conversation shares (Whisper's and Silero's runtime arenas): a committed
	// turn of two windows, heard before the text turn after it is answered.
	c.send(betaSessionUpdate(nil))
	c.until("session.updated", nil)
	c.appendAudio(loop[:35*24000])
	c.send(map[string]any{"type": "input_audio_buffer.commit"})
	c.until("input_audio_buffer.committed", nil)
	turnAfter(t, c, "Warm up.")
	heap := func() int { return int(s.metricsOf(t)["go_memstats_heap_inuse_bytes"]) >> 20 }
	baseHeap := heap()
	// The conversation's budget for what these phases push: the input buffer (2 min: 5.5 MiB of
	// pcm16 and 7.3 MiB of float32) and its copy at a commit, 5 min of kept audio (13.7 MiB), the
	// committed turns' audio awaiting transcription, one 10 s append being read, and the GC's
	// slack. Before the bounds the buffer alone held 10 min (64 MiB) in each phase.
	base := s.rssKiB(t)
	done := s.memoryGuard(t, 96)
	flood := func() (sent int) {
		for at := 0; at < len(loop); at += piece {
			c.send(map[string]any{"type": "input_audio_buffer.append", "event_id": fmt.Sprint("evt_", sent),
				"audio": base64.StdEncoding.EncodeToString(audio.Int16ToBytes(loop[at:min(at+piece, len(loop))]))})
			sent++
		}
		return sent
	}

	// Client commits and never does: 10 min appended, then a clear.
	sent := flood()
	c.send(map[string]any{"type": "input_audio_buffer.clear"})
	refused, firstRefused := 0, -1
	for {
		ev, ok := c.next(60 * time.Second)
		if !ok {
			t.Fatalf("the socket ended during the flood")
		}
		if ev.Type == "input_audio_buffer.cleared" {
			break
		}
		if ev.Type != "error" || ev.str("error", "code") != "input_audio_buffer_full" || ev.str("error", "param") != "audio" {
			t.Fatalf("during the flood: %.300s", ev.Raw)
		}
		if firstRefused < 0 {
			fmt.Sscanf(ev.str("error", "event_id"), "evt_%d", &firstRefused)
		}
		refused++
	}
	t.Logf("client commits: %d appends of 10 s, %d refused input_audio_buffer_full from evt_%d on; RSS %d MiB at the start, peak %d MiB",
		sent, refused, firstRefused, base>>10, s.statusKiB(t, "VmHWM:")>>10)
	if want := sent - 12; refused != want || firstRefused != 12 {
		t.Errorf("%d appends refused from evt_%d on, want %d from evt_12 (2 min of 10 s appends fit)", refused, firstRefused, want)
	}

	// server_vad on audio it hears as one long turn.
	c.send(betaSessionUpdate(map[string]any{"type": "server_vad", "threshold": 0.5, "prefix_padding_ms": 300,
		"silence_duration_ms": 60000, "create_response": false}))
	c.until("session.updated", nil)
	flood()
	c.send(map[string]any{"type": "input_audio_buffer.clear"})
	evs := c.until("input_audio_buffer.cleared", nil)
	committed := 0
	for _, ev := range evs {
		if ev.Type == "input_audio_buffer.committed" {
			committed++
		}
	}
	errs, _, tr := turnAfter(t, c, "Hello after the flood.")
	growth := done()
	t.Logf("server_vad held: %d turns committed; RSS peak +%d MiB over the start; Go heap in use %d MiB at the start, %d MiB at the end",
		committed, growth, baseHeap, heap())
	if committed < 4 {
		t.Errorf("%d turns committed in 10 min of one held turn, want one each 2 min", committed)
	}
	if len(errs) != 0 || tr == "" {
		t.Errorf("the text turn after: %d errors (%s), transcript %q", len(errs), firstRaw(errs), tr)
	}
	c.checkStrict()
	c.close()
	s.stop()
}
