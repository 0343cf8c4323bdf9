package session

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/voiced/voiced/internal/testkit"
	"github.com/voiced/voiced/turn"
	"github.com/voiced/voiced/wire"
)

// wordsEars hears "What time is it?" in a turn that holds the whole spoken question (at least
// full samples) and "What time is" in less: a transcriber that has not heard the last word yet.
type wordsEars struct{ full int }

func (e wordsEars) Transcribe(ctx context.Context, pcm []float32) (string, error) {
	if len(pcm) >= e.full {
		return "What time is it?", ctx.Err()
	}
	return "What time is", ctx.Err()
}

// settledDetector runs a detector once the conversation's partial decodes have returned, so the
// partial it reads is the one hear asked for on the pushes before (what a decoder faster than a
// push gives) and the test does not depend on how the decode workers are scheduled. It keeps the
// turn ends it reports.
type settledDetector struct {
	turn.Detector
	c     *conversation
	stops []turn.SpeechStopped
}

func (d *settledDetector) Feed(pcm []float32, at int64) ([]turn.Event, error) {
	guard := time.Now().Add(10 * time.Second) // a deadlock guard, not a timing claim
	for d.c.in.partials.busy.Load() != 0 {
		if time.Now().After(guard) {
			panic("a partial decode did not return within 10 s")
		}
		runtime.Gosched()
	}
	evs, err := d.Detector.Feed(pcm, at)
	for _, ev := range evs {
		if stop, ok := ev.(turn.SpeechStopped); ok {
			d.stops = append(d.stops, stop)
		}
	}
	return evs, err
}

// The speaker stops 100 ms after the last partial decode (600 ms of "What time is it?", partials
// every 500 ms): the partial in hand reads "What time is" (Unfinished, a 2 s wait). The pause
// decodes the turn so far at once, so semantic_vad judges the whole question: the turn ends on
// the Complete wait (7 windows), and a speculation starts on the full text, released at the end.
// Without the decode at the pause the next partial comes 400 ms into the silence (the cadence),
// the turn ends then, later, and unannounced (no EndLikely: nothing was speculated).
func TestPartialAtPauseEndsOnCompleteWait(t *testing.T) {
	testkit.CheckLeaks(t)
	chat, m := newChatMind(t, false)
	const speech = 30 * 320 // 30 appends of 20 ms: 600 ms at 16 kHz
	var c *conversation
	var d *settledDetector
	s, err := New(Config{Speculate: true, Engines: Engines{Ears: wordsEars{full: speech}, Voice: fakeVoice{}, Mind: m,
		NewTurnDetector: func(td wire.TurnDetection, p Partial) (turn.Detector, error) {
			inner, err := TurnDetectors(energySpeech)(td, p)
			d = &settledDetector{Detector: inner, c: c}
			return d, err
		}}})
	if err != nil {
		t.Fatal(err)
	}
	tr := newFakeTransport(t, Media{})
	c = newConversation(s, tr, Grant{Principal: Principal{Subject: "pause"}}, wire.GA, "m")
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.run(context.Background())
	}()
	defer func() { close(tr.in); <-done }()
	tr.until("session.created")
	tr.event(map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime",
		"audio": map[string]any{"input": map[string]any{"turn_detection": map[string]any{"type": "semantic_vad"}}}}})
	tr.until("session.updated")
	for i := range 150 { // 600 ms of speech, then up to 2.4 s of silence
		tr.event(appendEvent(pcm24(20, i < 30)))
	}
	evs := tr.until("response.done")
	if !strings.Contains(typesOf(evs), "input_audio_buffer.speech_stopped") {
		t.Fatalf("no turn end: %s", typesOf(evs))
	}
	if len(d.stops) != 1 {
		t.Fatalf("turn ends %+v, want one", d.stops)
	}
	dead := d.stops[0].End - d.stops[0].SpeechEnd
	t.Logf("turn-end dead time %d samples (%d ms)", dead, sampleMs(dead))
	if want := int64(7 * 512); dead != want { // 200 ms in whole 32 ms windows
		t.Errorf("turn-end dead time %d samples, want the Complete wait's %d", dead, want)
	}
	if got := receive(t, chat.asked, "the mind's call"); got != "What time is it?" {
		t.Errorf("the mind was asked %q, want the whole question", got)
	}
	outcome := func(name string) int {
		var m dto.Metric
		if err := s.metrics.speculations.WithLabelValues(name).Write(&m); err != nil {
			t.Fatal(err)
		}
		return int(m.GetCounter().GetValue())
	}
	if outcome(specStarted) != 1 || outcome(specUsed) != 1 || chat.count() != 1 {
		t.Errorf("speculations started %d used %d, mind calls %d; want 1 1 1", outcome(specStarted), outcome(specUsed), chat.count())
	}
}
