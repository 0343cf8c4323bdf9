package session

import (
	"context"
	"encoding/base64"
	"testing"
	"testing/synctest"

	"github.com/voiced/voiced/internal/testkit"
	"github.com/voiced/voiced/wire"
)

// manualSession sets turn detection off (the client commits) with transcription on.
func manualSession() map[string]any {
	return map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime",
		"audio": map[string]any{"input": map[string]any{"turn_detection": nil, "transcription": map[string]any{"model": "whisper-1"}}}}}
}

// manualTurns starts a conversation on media that hears "hi" in every turn and switches it to
// manual turns (manualSession); it ends with the test.
func manualTurns(t *testing.T, media Media) *fakeTransport {
	testkit.CheckLeaks(t)
	s, err := New(Config{Engines: Engines{Ears: fakeEars{"hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	tr := newFakeTransport(t, media)
	converse(t, s, tr)
	tr.until("session.created")
	tr.event(manualSession())
	tr.until("session.updated")
	return tr
}

// retrievedAudio retrieves item id and returns its first part's audio bytes and transcript.
func retrievedAudio(t *testing.T, tr *fakeTransport, id string) (audioBytes int, transcript any) {
	t.Helper()
	tr.event(map[string]any{"type": "conversation.item.retrieve", "item_id": id})
	evs := tr.until("conversation.item.retrieved")
	part := evs[len(evs)-1]["item"].(map[string]any)["content"].([]any)[0].(map[string]any)
	if s, ok := part["audio"].(string); ok {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		audioBytes = len(b)
	}
	return audioBytes, part["transcript"]
}

// Without turn detection the buffer holds maxInputAudio at most: an append past it is refused by
// name (input_audio_buffer_full, its event_id, param audio), what was buffered stays and is
// committed whole, and a commit makes room again. Before, the buffer took whatever came until
// --session-limit (an hour: ~400 MB for one conversation).
func TestInputBufferFullRefusesAppend(t *testing.T) {
	tr := manualTurns(t, Media{})

	half := pcm24(maxInputAudio/2, true)
	tr.event(appendEvent(half))
	tr.event(appendEvent(half)) // exactly the bound: it fits
	over := appendEvent(pcm24(20, true))
	over["event_id"] = "evt_over"
	tr.event(over)
	tr.event(map[string]any{"type": "input_audio_buffer.commit"})
	ev := tr.next()
	if ev["type"] != "error" {
		t.Fatalf("after %d ms of audio, 20 ms more: %v; want error %s", maxInputAudio, ev, codeInputBufferFull)
	}
	e := ev["error"].(map[string]any)
	if e["code"] != codeInputBufferFull || e["type"] != wire.TypeInvalidRequest || e["event_id"] != "evt_over" || e["param"] != "audio" {
		t.Fatalf("refusal %v", e)
	}
	t.Logf("refusal: %v", e["message"])
	item := tr.until("input_audio_buffer.committed")
	id := item[len(item)-1]["item_id"].(string)
	tr.until("conversation.item.input_audio_transcription.completed")
	if n, _ := retrievedAudio(t, tr, id); n != 2*len(half) {
		t.Fatalf("the committed item keeps %d bytes of audio, want the %d buffered before the refusal", n, 2*len(half))
	}

	// Committed: there is room again.
	tr.event(appendEvent(pcm24(500, true)))
	tr.event(map[string]any{"type": "input_audio_buffer.commit"})
	if ev := tr.next(); ev["type"] != "input_audio_buffer.committed" {
		t.Fatalf("an append after the commit: %v, want it taken", ev)
	}
}

// Track audio (WebRTC) without turn detection is refused once when the buffer is full, not once
// per frame (50 error events a second), and taken again after a commit.
func TestInputBufferFullRefusesTrackOnce(t *testing.T) {
	tr := manualTurns(t, Media{TrackInput: true})

	tone := tone16(10*1000, true) // 10 s
	for range maxInputAudio/10000 + 5 {
		tr.in <- Inbound{Audio: tone}
	}
	tr.event(map[string]any{"type": "input_audio_buffer.commit"})
	evs := tr.until("input_audio_buffer.committed")
	errs := 0
	for _, ev := range evs {
		if ev["type"] == "error" {
			errs++
			if e := ev["error"].(map[string]any); e["code"] != codeInputBufferFull || e["event_id"] != nil {
				t.Errorf("refusal %v", e)
			}
		}
	}
	if errs != 1 {
		t.Fatalf("%d refusals for 5 frames past the bound, want 1: %s", errs, typesOf(evs))
	}
	tr.until("conversation.item.input_audio_transcription.completed")
	if n, _ := retrievedAudio(t, tr, evs[len(evs)-1]["item_id"].(string)); n != maxInputAudio*48 {
		t.Fatalf("the committed item keeps %d bytes, want %d (%d ms)", n, maxInputAudio*48, maxInputAudio)
	}
	tr.in <- Inbound{Audio: tone}
	tr.event(map[string]any{"type": "input_audio_buffer.commit"})
	if ev := tr.next(); ev["type"] != "input_audio_buffer.committed" {
		t.Fatalf("track audio after the commit: %v, want it taken", ev)
	}
}

// Under a detector that holds the turn (noise it reads as speech, a monologue), the turn ends
// at maxInputAudio as if the speaker had stopped there: speech_stopped, committed (with a reply
// when create_response), and the speech that goes on is a new turn. One append longer than the
// bound is heard in steps, so the turn ends inside it. Before, the buffer grew with the turn.
func TestHeldTurnEndsAtTheBound(t *testing.T) {
	testkit.CheckLeaks(t)
	s, err := New(Config{Engines: Engines{Ears: fakeEars{"hi"}, NewTurnDetector: newEnergyDetector}})
	if err != nil {
		t.Fatal(err)
	}
	tr := newFakeTransport(t, Media{})
	defer converse(t, s, tr)()
	tr.until("session.created")
	tr.event(map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime",
		"audio": map[string]any{"input": map[string]any{"turn_detection": map[string]any{"type": "server_vad", "create_response": false}}}}})
	tr.until("session.updated")

	const speech = maxInputAudio + maxInputAudio/4 // ms, in one append
	tr.event(appendEvent(pcm24(speech, true)))
	tr.event(appendEvent(pcm24(1000, false))) // then quiet: the second turn ends
	evs := tr.until("input_audio_buffer.committed")
	evs = append(evs, tr.until("input_audio_buffer.committed")...)
	var started, stopped []map[string]any
	for _, ev := range evs {
		switch ev["type"] {
		case "input_audio_buffer.speech_started":
			started = append(started, ev)
		case "input_audio_buffer.speech_stopped":
			stopped = append(stopped, ev)
		}
	}
	if len(started) != 2 || len(stopped) != 2 {
		t.Fatalf("%d starts, %d stops, want 2 of each: %s", len(started), len(stopped), typesOf(evs))
	}
	end := stopped[0]["audio_end_ms"].(float64)
	if end < maxInputAudio-hearStep || end > maxInputAudio+hearStep {
		t.Errorf("the held turn ended at %v ms, want at the bound (%d ms)", end, maxInputAudio)
	}
	if started[1]["item_id"] == started[0]["item_id"] || started[1]["audio_start_ms"].(float64) < end {
		t.Errorf("the speech going on: %v after %v", started[1], stopped[0])
	}
	n, _ := retrievedAudio(t, tr, stopped[0]["item_id"].(string))
	if ms := wire.PCM16.Millis(n); ms > maxInputAudio || ms < maxInputAudio-2*hearStep {
		t.Errorf("the first turn keeps %.0f ms of audio, want about %d", ms, maxInputAudio)
	}
}

// Committed user audio is kept for retrieve under keptAudio with reply audio: the newest items
// keep theirs, older ones lose it and keep their transcript. Before, every committed turn kept
// its audio for the whole session (~173 MB an hour at pcm16 24 kHz).
func TestKeptUserAudioIsBounded(t *testing.T) {
	tr := manualTurns(t, Media{})

	const turn = keptAudio / 3 // ms: three turns fill what is kept, a fourth pushes the first out
	var ids []string
	for range 4 {
		tr.event(appendEvent(pcm24(turn, true)))
		tr.event(map[string]any{"type": "input_audio_buffer.commit"})
		evs := tr.until("input_audio_buffer.committed")
		ids = append(ids, evs[len(evs)-1]["item_id"].(string))
		tr.until("conversation.item.input_audio_transcription.completed")
	}
	if n, transcript := retrievedAudio(t, tr, ids[0]); n != 0 || transcript == nil || transcript == "" {
		t.Errorf("the oldest turn: %d bytes of audio, transcript %v; want no audio, its transcript", n, transcript)
	}
	for _, id := range ids[1:] {
		if n, transcript := retrievedAudio(t, tr, id); n != turn*48 || transcript == nil || transcript == "" {
			t.Errorf("a newer turn: %d bytes of audio, transcript %v; want %d bytes and its transcript", n, transcript, turn*48)
		}
	}
}

// gatedEars hears nothing until released, one utterance window per token.
type gatedEars struct{ release chan struct{} }

func (g gatedEars) Transcribe(ctx context.Context, pcm []float32) (string, error) {
	select {
	case <-g.release:
		return "hi", nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// Committed turns wait for their transcription holding their 16 kHz audio; a client committing
// faster than Whisper hears is slowed (its next commit waits) once maxTranscribing is waiting,
// rather than the turns piling up for the whole session. Before, every commit was taken at once.
func TestTranscriptionBacklogIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ears := gatedEars{release: make(chan struct{})}
		s, err := New(Config{Engines: Engines{Ears: ears}})
		if err != nil {
			t.Fatal(err)
		}
		tr := newFakeTransport(t, Media{})
		sent := make(chan struct{})
		defer converse(t, s, tr)()
		defer func() { <-sent }() // the sender is done before the client leaves
		defer close(ears.release)
		tr.until("session.created")
		tr.event(manualSession())
		tr.until("session.updated")

		const turn = 30 * 1000 // ms: one Whisper window each
		turns := maxTranscribing / (turn * hearRate / 1000)
		chunk := pcm24(turn, true)
		go func() {
			defer close(sent)
			for range turns + 1 {
				tr.event(appendEvent(chunk))
				tr.event(map[string]any{"type": "input_audio_buffer.commit"})
			}
		}()
		for range turns {
			tr.until("input_audio_buffer.committed")
		}
		synctest.Wait() // every goroutine of the conversation is blocked: what was taken is all it takes
		tr.mu.Lock()
		committed := 0
		for _, ev := range tr.events {
			if ev["type"] == "input_audio_buffer.committed" {
				committed++
			}
		}
		tr.mu.Unlock()
		if committed != turns {
			t.Fatalf("%d commits taken while %d turns (%d samples) wait for Whisper, want %d", committed, turns, maxTranscribing, turns)
		}
		ears.release <- struct{}{} // the first turn is heard: room for the next
		tr.until("input_audio_buffer.committed")
	})
}

// Audio handed over in conversation.item.create to be transcribed is bounded as the buffer is
// (decoded whole it is 4 to 8 times its bytes): longer is refused by name; with its transcript
// it is not heard and only counts toward the conversation's bytes.
func TestCreatedItemAudioIsBounded(t *testing.T) {
	testkit.CheckLeaks(t)
	s, err := New(Config{Engines: Engines{Ears: fakeEars{"hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	tr := newFakeTransport(t, Media{})
	defer converse(t, s, tr)()
	tr.until("session.created")
	long := base64.StdEncoding.EncodeToString(pcm24(maxInputAudio+1000, false))
	item := func(transcript any) map[string]any {
		part := map[string]any{"type": "input_audio", "audio": long}
		if transcript != nil {
			part["transcript"] = transcript
		}
		return map[string]any{"type": "conversation.item.create", "event_id": "evt_long",
			"item": map[string]any{"type": "message", "role": "user", "content": []any{part}}}
	}
	tr.event(item(nil))
	ev := tr.next()
	if ev["type"] != "error" {
		t.Fatalf("%d ms of audio to transcribe in an item: %v, want error %s", maxInputAudio+1000, ev["type"], codeAudioTooLong)
	}
	if e := ev["error"].(map[string]any); e["code"] != codeAudioTooLong || e["param"] != "item.content[0].audio" || e["event_id"] != "evt_long" {
		t.Fatalf("refusal %v", e)
	}
	tr.event(item("hi"))
	if ev := tr.next(); ev["type"] != "conversation.item.added" {
		t.Fatalf("the same audio with its transcript: %v, want it added", ev)
	}
}
