package session

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/voiced/voiced/internal/testkit"
)

// speakOver runs a two-sentence reply (its second sentence held until the user has started to
// speak), speaks loudMs of loud audio during it, then silence, and returns every event from the
// first audio delta to response.done, and the 24 kHz samples the reply's deltas carried with the
// samples its transcript says it spoke (fakeVoice: 240 a character).
func speakOver(t *testing.T, heard string, rule map[string]any, loudMs int) (evs []map[string]any, got, want int) {
	return speakOverTo(t, fakeEars{heard}, rule, loudMs)
}

// speakOverTo is speakOver with the given ears.
func speakOverTo(t *testing.T, ears Ears, rule map[string]any, loudMs int) (evs []map[string]any, got, want int) {
	testkit.CheckLeaks(t)
	gate := make(chan struct{}, 2)
	ts := newTestServer(t, Config{Engines: Engines{Ears: ears, Voice: fakeVoice{gate: gate}, NewTurnDetector: newEnergyDetector}})
	c := ts.open(t)
	c.send(map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime",
		"voiced": map[string]any{"interruption": rule}}})
	c.until("session.updated")
	c.send(map[string]any{"type": "conversation.item.create", "item": map[string]any{"type": "message", "role": "user",
		"content": []any{map[string]any{"type": "input_text", "text": "Tell me a story. Make it a long one about the sea and its ships."}}}})
	added := c.until("conversation.item.done")
	userItem := added[len(added)-1]["item"].(map[string]any)["id"]
	c.send(map[string]any{"type": "response.create"})
	gate <- struct{}{}
	evs = c.until("response.output_audio.delta")
	for range loudMs / 100 {
		c.send(appendEvent(pcm24(100, true)))
	}
	// The input goroutine takes events in order: once the item is retrieved the speech so far was
	// heard (and any partial decode of it started, which the next step of speech reads).
	c.send(map[string]any{"type": "conversation.item.retrieve", "item_id": userItem})
	evs = append(evs, c.until("conversation.item.retrieved")...)
	c.send(appendEvent(pcm24(100, true)))
	gate <- struct{}{} // the second sentence is ready to speak while the user speaks
	evs, got, want, _ = replyDone(c, evs)
	return evs, got, want
}

// replyDone sends 600 ms of silence, collects the reply's events up to its response.done and
// counts its audio: got, the samples sent; want, the samples its transcript deltas stand for (240
// a character); first, those of the first delta alone.
func replyDone(c *client, evs []map[string]any) (_ []map[string]any, got, want, first int) {
	for range 6 {
		c.send(appendEvent(pcm24(100, false)))
	}
	if countType(evs, "response.done") == 0 {
		evs = append(evs, c.until("response.done")...)
	}
	for i, ev := range evs {
		if ev["type"] == "response.done" {
			evs = evs[:i+1]
			break
		}
	}
	for _, ev := range evs {
		switch ev["type"] {
		case "response.output_audio.delta":
			b, _ := base64.StdEncoding.DecodeString(ev["delta"].(string))
			got += len(b) / 2
		case "response.output_audio_transcript.delta":
			n := 240 * len(strings.TrimSpace(ev["delta"].(string)))
			if first == 0 {
				first = n
			}
			want += n
		}
	}
	return evs, got, want, first
}

func countType(evs []map[string]any, typ string) int {
	n := 0
	for _, ev := range evs {
		if ev["type"] == typ {
			n++
		}
	}
	return n
}

func doneStatus(evs []map[string]any) string {
	return evs[len(evs)-1]["response"].(map[string]any)["status"].(string)
}

// A backchannel ("Mm-hmm.") during a reply is no interruption: the client hears nothing of it
// (no speech_started, no item), the reply resumes and completes, and the audio it sent is all of it.
func TestBackchannelResumesTheReply(t *testing.T) {
	evs, got, want := speakOver(t, "Mm-hmm.", map[string]any{"min_duration_ms": 100, "min_words": 1}, 800)
	if n := countType(evs, "input_audio_buffer.speech_started") + countType(evs, "input_audio_buffer.committed"); n != 0 {
		t.Errorf("a backchannel reached the client as %d turn events; want none", n)
	}
	if s := doneStatus(evs); s != "completed" || got != want || want < 240*40 {
		t.Errorf("response.done %s with %d samples of the %d spoken; want completed, all of them", s, got, want)
	}
}

// A sound shorter than min_duration_ms (a cough, a knock) is no interruption either.
func TestShortSoundResumesTheReply(t *testing.T) {
	evs, got, want := speakOver(t, "", map[string]any{"min_duration_ms": 1000}, 300)
	if n := countType(evs, "input_audio_buffer.speech_started"); n != 0 || doneStatus(evs) != "completed" || got != want {
		t.Errorf("a 300 ms sound under a 1 s minimum: %d speech_started, response.done %s, %d of %d samples", n, doneStatus(evs), got, want)
	}
}

// Words that are not a backchannel ("Stop, wait.") interrupt: speech_started, then the reply is
// cancelled (turn_detected), as without the rule. The reply paused when the speech started, so
// the second sentence, ready while the user spoke, sent no audio: the client got the first
// sentence's alone.
func TestMeantInterruptionCancels(t *testing.T) {
	evs, got, _ := speakOver(t, "Stop, wait.", map[string]any{"min_duration_ms": 100, "min_words": 1}, 800)
	first := 0
	for _, ev := range evs {
		if ev["type"] == "response.output_audio_transcript.delta" {
			first = 240 * len(strings.TrimSpace(ev["delta"].(string)))
			break
		}
	}
	if countType(evs, "input_audio_buffer.speech_started") != 1 || doneStatus(evs) != "cancelled" || got != first {
		t.Errorf("\"Stop, wait.\": %d speech_started, response.done %s, %d samples sent; want 1, cancelled, the first sentence's %d",
			countType(evs, "input_audio_buffer.speech_started"), doneStatus(evs), got, first)
	}
}

// lateEars hear finals at once and never finish a partial (a decoder busy with other
// conversations' finals): the partial in hand when speech ends is none.
type lateEars struct{ text string }

func (l lateEars) Transcribe(ctx context.Context, pcm []float32) (string, error) {
	return l.TranscribeAs(ctx, pcm, Hearing{})
}

func (l lateEars) TranscribeAs(ctx context.Context, pcm []float32, h Hearing) (string, error) {
	if h.Partial {
		<-ctx.Done()
		return "", ctx.Err()
	}
	return l.text, nil
}

// The verdict on speech that ends hangs on its last words, not on a partial that never heard
// them: with no partial back by the end of "Stop, wait.", the held speech is decoded then and
// cancels the reply; "Mm-hmm." decoded the same way still resumes it whole.
func TestLastWordsJudgeTheSpeech(t *testing.T) {
	rule := map[string]any{"min_duration_ms": 100, "min_words": 1}
	evs, _, _ := speakOverTo(t, lateEars{"Stop, wait."}, rule, 800)
	if countType(evs, "input_audio_buffer.speech_started") != 1 || doneStatus(evs) != "cancelled" {
		t.Errorf("\"Stop, wait.\" with no partial in hand: %d speech_started, response.done %s; want 1, cancelled",
			countType(evs, "input_audio_buffer.speech_started"), doneStatus(evs))
	}
	evs, got, want := speakOverTo(t, lateEars{"Mm-hmm."}, rule, 800)
	if n := countType(evs, "input_audio_buffer.speech_started"); n != 0 || doneStatus(evs) != "completed" || got != want {
		t.Errorf("\"Mm-hmm.\" with no partial in hand: %d speech_started, response.done %s, %d of %d samples; want 0, completed, all",
			n, doneStatus(evs), got, want)
	}
}

// Without voiced.interruption every speech_started cancels, as OpenAI's server does.
func TestWithoutRuleSpeechCancels(t *testing.T) {
	evs, _, _ := speakOver(t, "Mm-hmm.", nil, 800)
	if countType(evs, "input_audio_buffer.speech_started") != 1 || doneStatus(evs) != "cancelled" {
		t.Errorf("without the rule: %d speech_started, response.done %s; want 1, cancelled", countType(evs, "input_audio_buffer.speech_started"), doneStatus(evs))
	}
}

func TestBackchannelWords(t *testing.T) {
	for text, want := range map[string]bool{"Mm-hmm.": true, "Yeah, yeah.": true, "okay": true, "Right.": true,
		"Stop, wait.": false, "yeah but no": false, "": false, "Sí, claro.": true} {
		if got := backchannel(wordsOf(text), ""); got != want {
			t.Errorf("backchannel(%q) = %v, want %v", text, got, want)
		}
	}
	if backchannel(wordsOf("genau"), "en") {
		t.Error("a German backchannel counted in an English session")
	}
}
