package session

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/internal/testkit"
	"github.com/voiced/voiced/turn"
	"github.com/voiced/voiced/wire"
)

// energyProber is a turn.Prober without a model: a window is speech (1) when loud, else 0.
type energyProber struct{ buf []float32 }

func (p *energyProber) Feed(pcm []float32, emit func(float32)) error {
	p.buf = append(p.buf, pcm...)
	for len(p.buf) >= p.Window() {
		prob := float32(0)
		if audio.RMS(p.buf[:p.Window()]) > 0.05 {
			prob = 1
		}
		emit(prob)
		p.buf = p.buf[p.Window():]
	}
	return nil
}
func (p *energyProber) Window() int  { return 512 }
func (p *energyProber) Pending() int { return len(p.buf) }
func (p *energyProber) Reset()       { p.buf = nil }
func (p *energyProber) Close() error { return nil }

var energySpeech = turn.SpeechFunc(func() (turn.Prober, error) { return &energyProber{}, nil })

func loud16k(n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = 0.3
		if i%2 == 1 {
			out[i] = -0.3
		}
	}
	return out
}

// A session's server_vad becomes turn's Hush with its settings; positions come back in samples
// on the clock it is fed: the onset and the start at the first loud window (no prefix padding),
// the stop at the last speech plus the silence duration.
func TestTurnDetectorsServerVAD(t *testing.T) {
	newDetector := TurnDetectors(energySpeech)
	d, err := newDetector(wire.TurnDetection{Type: wire.TurnServerVAD, Threshold: 0.5, PrefixPaddingMs: 0, SilenceDurationMs: 320}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	quiet := make([]float32, 4096)
	var evs []turn.Event
	at := int64(0)
	for _, pcm := range [][]float32{quiet, loud16k(16384), make([]float32, 16384)} {
		got, err := d.Feed(pcm, at)
		if err != nil {
			t.Fatal(err)
		}
		at += int64(len(pcm))
		evs = append(evs, got...)
	}
	want := []turn.Event{turn.Onset{At: 4096}, turn.SpeechStarted{Start: 4096}, turn.Paused{At: 4096 + 16384},
		turn.SpeechStopped{End: 4096 + 16384 + 5120, SpeechEnd: 4096 + 16384}}
	if len(evs) != len(want) || evs[0] != want[0] || evs[1] != want[1] || evs[2] != want[2] || evs[3] != want[3] {
		t.Fatalf("events %+v, want %+v", evs, want)
	}
	if _, err := newDetector(wire.TurnDetection{Type: wire.TurnSemanticVAD, Eagerness: "eager"}, func() string { return "" }); err == nil {
		t.Error("semantic_vad with eagerness \"eager\": no error")
	}
}

// countingProber counts the windows its model runs (read after the conversation has ended).
type countingProber struct {
	energyProber
	windows *atomic.Int64
}

func (p *countingProber) Feed(pcm []float32, emit func(float32)) error {
	return p.energyProber.Feed(pcm, func(prob float32) { p.windows.Add(1); emit(prob) })
}

// passSquelch is a SharedSquelch standing in for cmd/voiced's: it admits a push in which any
// window is speech, and lends its pass.
type passSquelch struct {
	*turn.Shared
	reader turn.Prober
}

func (q *passSquelch) Push(pcm []float32) ([]float32, error) {
	open := false
	err := q.reader.Feed(pcm, func(prob float32) { open = open || prob > 0.5 })
	if !open {
		return nil, err
	}
	return pcm, err
}

func (q *passSquelch) Close() error {
	q.reader.Close()
	return q.Shared.Close()
}

// One VAD pass per conversation: with a squelch that lends its pass, the turn detector reads it,
// so the model runs once per window of input — not once for the squelch and again for the
// detector — and the turn is still found and answered.
func TestOneVADPassPerConversation(t *testing.T) {
	testkit.CheckLeaks(t)
	var windows atomic.Int64
	counting := turn.SpeechFunc(func() (turn.Prober, error) { return &countingProber{windows: &windows}, nil })
	s, err := New(Config{Engines: Engines{Ears: fakeEars{"hello there"}, Voice: fakeVoice{},
		NewSquelch: func() (Squelch, error) {
			p, _ := counting.NewProber()
			pass := turn.Share(p)
			r, err := pass.NewProber()
			return &passSquelch{Shared: pass, reader: r}, err
		},
		NewTurnDetector:   TurnDetectors(counting), // a second pass: what the conversation must not use
		NewTurnDetectorOn: TurnDetectorOn,
	}})
	if err != nil {
		t.Fatal(err)
	}
	tr := newFakeTransport(t, Media{TrackInput: true})
	end := converse(t, s, tr)
	tr.until("session.created")
	tr.event(map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime",
		"audio": map[string]any{"input": map[string]any{"turn_detection": map[string]any{"type": "server_vad", "silence_duration_ms": 300}}}}})
	tr.until("session.updated")
	const frames = 60 // 20 ms each at 24 kHz: 400 ms of speech, then 800 ms of silence
	for i := range frames {
		tr.in <- Inbound{Audio: tone16(20, i < 20)}
	}
	evs := tr.until("response.done")
	for _, want := range []string{"input_audio_buffer.speech_started", "input_audio_buffer.speech_stopped", "response.created"} {
		if !strings.Contains(typesOf(evs), want) {
			t.Errorf("no %s in %s", want, typesOf(evs))
		}
	}
	end()
	if want := int64(frames * 320 / 512); windows.Load() != want {
		t.Errorf("the model ran %d windows over %d windows of audio, want once per window", windows.Load(), want)
	}
}

// semantic_vad's eagerness travels from session.update to the detector it builds and is echoed
// in session.updated, each value as OpenAI names it.
func TestEagernessReachesDetector(t *testing.T) {
	testkit.CheckLeaks(t)
	built := make(chan turn.Eagerness, 1)
	ts := newTestServer(t, Config{Engines: Engines{Ears: fakeEars{"hi"}, Voice: fakeVoice{},
		NewTurnDetector: func(td wire.TurnDetection, p Partial) (turn.Detector, error) {
			d, err := TurnDetectors(energySpeech)(td, p)
			if err == nil {
				if sem, ok := d.(*turn.Semantic); ok {
					built <- sem.Config().Eagerness
				}
			}
			return d, err
		}}})
	c := ts.open(t)
	for _, e := range []string{"low", "medium", "high", "auto"} {
		c.send(map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime",
			"audio": map[string]any{"input": map[string]any{"turn_detection": map[string]any{"type": "semantic_vad", "eagerness": e}}}}})
		ev := c.expect("session.updated")[0]
		td := ev["session"].(map[string]any)["audio"].(map[string]any)["input"].(map[string]any)["turn_detection"].(map[string]any)
		if td["type"] != "semantic_vad" || td["eagerness"] != e {
			t.Errorf("eagerness %s: session.updated echoes %v", e, td)
		}
		want, _ := turn.ParseEagerness(e)
		if got := <-built; got != want {
			t.Errorf("eagerness %s: the detector runs at %v", e, got)
		}
	}
}

// semantic_vad's hints reach the conversation as turn events (the onset first): the transcript judged finished in
// the pause (EndLikely), then the speaker going on (EndUnlikely), then the stop.
func TestTurnDetectorsSemanticHints(t *testing.T) {
	d, err := TurnDetectors(energySpeech)(wire.TurnDetection{Type: wire.TurnSemanticVAD}, func() string { return "Hi there." })
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var evs []turn.Event
	at := int64(0)
	for _, pcm := range [][]float32{loud16k(5120), make([]float32, 1024), loud16k(2048), make([]float32, 16000)} {
		got, err := d.Feed(pcm, at)
		if err != nil {
			t.Fatal(err)
		}
		at += int64(len(pcm))
		evs = append(evs, got...)
	}
	want := []turn.Event{turn.Onset{At: 0}, turn.SpeechStarted{Start: 0}, turn.Paused{At: 5120}, turn.EndLikely{At: 5632, Transcript: "Hi there."},
		turn.EndUnlikely{At: 6144, Resumed: true}, turn.Paused{At: 8192}, turn.EndLikely{At: 8704, Transcript: "Hi there."},
		turn.SpeechStopped{End: 8192 + 3584, SpeechEnd: 8192}} // the Complete wait, 200 ms, in whole windows
	if len(evs) != len(want) {
		t.Fatalf("events %+v, want %+v", evs, want)
	}
	for i := range want {
		if evs[i] != want[i] {
			t.Fatalf("event %d: %+v, want %+v", i, evs[i], want[i])
		}
	}
}
