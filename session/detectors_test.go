package session

import (
	"testing"

	"github.com/voiced/voiced/speechcore/audio"
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
// from the detector's first push: the start at the first loud window (no prefix padding), the
// stop at the last speech plus the silence duration.
func TestTurnDetectorsServerVAD(t *testing.T) {
	newDetector := TurnDetectors(energySpeech)
	d, err := newDetector(wire.TurnDetection{Type: wire.TurnServerVAD, Threshold: 0.5, PrefixPaddingMs: 0, SilenceDurationMs: 320}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	quiet := make([]float32, 4096)
	var evs []TurnEvent
	for _, pcm := range [][]float32{quiet, loud16k(16384), make([]float32, 16384)} {
		got, err := d.Push(pcm)
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, got...)
	}
	want := []TurnEvent{{Sample: 4096}, {Stopped: true, Sample: 4096 + 16384 + 5120, SpeechEnd: 4096 + 16384}}
	if len(evs) != len(want) || evs[0] != want[0] || evs[1] != want[1] {
		t.Fatalf("events %+v, want %+v", evs, want)
	}
	if _, err := newDetector(wire.TurnDetection{Type: wire.TurnSemanticVAD, Eagerness: "eager"}, func() string { return "" }); err == nil {
		t.Error("semantic_vad with eagerness \"eager\": no error")
	}
}

// semantic_vad's hints reach the conversation as TurnEvents: the transcript judged finished in
// the pause (HintEndLikely), then the speaker going on (HintEndUnlikely), then the stop.
func TestTurnDetectorsSemanticHints(t *testing.T) {
	d, err := TurnDetectors(energySpeech)(wire.TurnDetection{Type: wire.TurnSemanticVAD}, func() string { return "Hi there." })
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var evs []TurnEvent
	for _, pcm := range [][]float32{loud16k(5120), make([]float32, 1024), loud16k(2048), make([]float32, 16000)} {
		got, err := d.Push(pcm)
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, got...)
	}
	want := []TurnEvent{{Sample: 0}, {Hint: HintEndLikely, Sample: 5632, Transcript: "Hi there."},
		{Hint: HintEndUnlikely, Sample: 6144}, {Hint: HintEndLikely, Sample: 8704, Transcript: "Hi there."},
		{Stopped: true, Sample: 8192 + 5120, SpeechEnd: 8192}}
	if len(evs) != len(want) {
		t.Fatalf("events %+v, want %+v", evs, want)
	}
	for i := range want {
		if evs[i] != want[i] {
			t.Fatalf("event %d: %+v, want %+v", i, evs[i], want[i])
		}
	}
}
