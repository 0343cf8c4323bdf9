package turn

import (
	"errors"
	"reflect"
	"testing"

	"github.com/voiced/voiced/speechcore/squelch"
)

// countingProber counts the windows its model runs.
type countingProber struct {
	Prober
	windows int
}

func (p *countingProber) Feed(pcm []float32, emit func(float32)) error {
	return p.Prober.Feed(pcm, func(prob float32) { p.windows++; emit(prob) })
}

// recordedTurns is the silero-vad-go recordings with a second of room tone after each.
func recordedTurns(t testing.TB) []float32 {
	return concat(sileroTestfile(t, "samples.pcm"), quiet(1, 7), sileroTestfile(t, "samples2.pcm"), quiet(1, 8))
}

// vadRun is what a conversation's input path decides over a stream: the detector's events and
// the samples the squelch admits, push by push (the detector hears each push first, as hear does).
type vadRun struct {
	events   [][]Event
	admitted []int
}

func runVAD(t testing.TB, d Detector, q *squelch.Squelch, pcm []float32, push int) vadRun {
	t.Helper()
	var r vadRun
	for at := 0; at < len(pcm); at += push {
		chunk := pcm[at:min(at+push, len(pcm))]
		ev, err := d.Feed(chunk, int64(at))
		if err != nil {
			t.Fatalf("detector at %d: %v", at, err)
		}
		passed, err := q.Push(chunk)
		if err != nil {
			t.Fatalf("squelch at %d: %v", at, err)
		}
		r.events = append(r.events, ev)
		r.admitted = append(r.admitted, len(passed))
	}
	return r
}

// One VAD pass shared by the squelch and the turn detector decides exactly what two passes do,
// on recorded speech in 20 ms pushes (not window multiples), while Silero runs once per window.
func TestSharedPassSameDecisions(t *testing.T) {
	model := needModel(t)
	pcm := recordedTurns(t)
	const push = rate / 50
	detectors := map[string]func(Speech) (Detector, error){
		"server_vad": func(s Speech) (Detector, error) { return NewHush(DefaultHushConfig(s)) },
		"semantic_vad": func(s Speech) (Detector, error) {
			return NewSemantic(DefaultSemanticConfig(s, TranscriptFunc(func() string { return "Go on." })))
		},
	}
	for name, newDetector := range detectors {
		t.Run(name, func(t *testing.T) {
			// Two passes: the detector and the squelch each run Silero.
			d1, err := newDetector(model)
			if err != nil {
				t.Fatal(err)
			}
			defer d1.Close()
			q1, err := squelch.New(squelch.Config{Model: sharedModel})
			if err != nil {
				t.Fatal(err)
			}
			defer q1.Close()
			separate := runVAD(t, d1, q1, pcm, push)

			// One pass: the squelch reads a reader of it, the detector another.
			stream, err := sharedModel.NewStream()
			if err != nil {
				t.Fatal(err)
			}
			counted := &countingProber{Prober: stream}
			pass := Share(counted)
			defer pass.Close()
			reader, err := pass.NewProber()
			if err != nil {
				t.Fatal(err)
			}
			q2, err := squelch.New(squelch.Config{Prober: reader})
			if err != nil {
				t.Fatal(err)
			}
			defer q2.Close()
			d2, err := newDetector(pass)
			if err != nil {
				t.Fatal(err)
			}
			defer d2.Close()
			shared := runVAD(t, d2, q2, pcm, push)

			var turns, admitted int
			for i := range separate.events {
				turns += len(separate.events[i])
				admitted += separate.admitted[i]
			}
			if turns < 4 || admitted == 0 || admitted == len(pcm) {
				t.Fatalf("the recordings gave %d turn events and %d of %d samples admitted: not a test of anything", turns, admitted, len(pcm))
			}
			if !reflect.DeepEqual(shared.events, separate.events) {
				t.Errorf("turn events differ:\nshared   %v\nseparate %v", shared.events, separate.events)
			}
			if !reflect.DeepEqual(shared.admitted, separate.admitted) {
				t.Errorf("squelch decisions differ (samples admitted per push)")
			}
			if want := len(pcm) / squelch.WindowSamples; counted.windows != want || pass.Windows() != int64(want) {
				t.Errorf("Silero ran %d windows (pass says %d) over %d windows of audio, want each once", counted.windows, pass.Windows(), want)
			}
			t.Logf("%d turn events, %.1f of %.1f s admitted, %d windows run once", turns, float64(admitted)/rate, float64(len(pcm))/rate, counted.windows)
		})
	}
}

// stepProber is a model without a model: window k's probability is k, so a reader's windows say
// which they are.
type stepProber struct{ filled, k int }

func (p *stepProber) Feed(pcm []float32, emit func(float32)) error {
	for range pcm {
		if p.filled++; p.filled == p.Window() {
			emit(float32(p.k))
			p.filled, p.k = 0, p.k+1
		}
	}
	return nil
}
func (p *stepProber) Window() int  { return 512 }
func (p *stepProber) Pending() int { return p.filled }
func (p *stepProber) Reset()       {}
func (p *stepProber) Close() error { return nil }

// Readers of a pass each read every window once, in order, whichever is ahead; one that joins
// later starts at the window in progress, with its part counted as pending; what every open
// reader has read is forgotten.
func TestSharedReaders(t *testing.T) {
	pass := Share(&stepProber{})
	a, _ := pass.NewProber()
	b, _ := pass.NewProber()
	var gotA, gotB []float32
	feed := func(r Prober, got *[]float32, n int) {
		t.Helper()
		if err := r.Feed(make([]float32, n), func(p float32) { *got = append(*got, p) }); err != nil {
			t.Fatal(err)
		}
	}
	feed(a, &gotA, 700) // a runs window 0
	feed(b, &gotB, 300)
	feed(b, &gotB, 800) // b reads window 0, then runs 1 and part of 2
	feed(a, &gotA, 400) // a catches up: window 1
	if want := []float32{0, 1}; !reflect.DeepEqual(gotA, want) || !reflect.DeepEqual(gotB, want) {
		t.Fatalf("a read %v, b read %v, want %v each", gotA, gotB, want)
	}
	if pass.Windows() != 2 || len(pass.probs) != 0 {
		t.Fatalf("pass ran %d windows and keeps %d, want 2 and none (both read them)", pass.Windows(), len(pass.probs))
	}
	c, _ := pass.NewProber() // joins at 1100: 76 samples into window 2
	if c.Pending() != 1100-1024 || a.Pending() != 1100-1024 {
		t.Fatalf("pending: joined %d, a %d, want 76", c.Pending(), a.Pending())
	}
	var gotC []float32
	feed(c, &gotC, 1024)
	if want := []float32{2, 3}; !reflect.DeepEqual(gotC, want) {
		t.Fatalf("late reader read %v, want %v", gotC, want)
	}
	if len(pass.probs) != 2 {
		t.Fatalf("pass keeps %d windows, want 2 (a and b have not read them)", len(pass.probs))
	}
	a.Close()
	b.Close()
	if len(pass.probs) != 0 {
		t.Fatalf("pass keeps %d windows after the laggards closed", len(pass.probs))
	}
	if err := a.Feed(make([]float32, 10), func(float32) {}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Feed on a closed reader: %v", err)
	}
	pass.Close()
	if _, err := pass.NewProber(); !errors.Is(err, ErrClosed) {
		t.Fatalf("NewProber on a closed pass: %v", err)
	}
}

// A detector that joins a pass mid-window (a session.update while the squelch has been reading)
// places its windows where they are in its own audio: a loud start lands at its first sample.
func TestDetectorJoinsPassMidWindow(t *testing.T) {
	pass := Share(&energyStep{})
	squelchReader, _ := pass.NewProber()
	if err := squelchReader.Feed(make([]float32, 300), func(float32) {}); err != nil {
		t.Fatal(err)
	}
	h, err := NewHush(HushConfig{Speech: pass, Threshold: 0.5, SilenceDuration: 0, MinSpeech: 0})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	// The detector's audio: 212 quiet samples end the pass's window 0, then loud windows.
	pcm := make([]float32, 212+2048)
	for i := 212; i < len(pcm); i++ {
		pcm[i] = 0.5
	}
	if err := squelchReader.Feed(pcm, func(float32) {}); err != nil {
		t.Fatal(err)
	}
	ev, err := h.Feed(pcm, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := []Event{SpeechStarted{Start: 212}}; !reflect.DeepEqual(ev, want) {
		t.Fatalf("events %v, want %v (window 0 began 300 samples before the detector joined)", ev, want)
	}
}

// energyStep: a window is speech (1) when its last sample is loud.
type energyStep struct{ stepProber }

func (p *energyStep) Feed(pcm []float32, emit func(float32)) error {
	for _, v := range pcm {
		if p.filled++; p.filled == p.Window() {
			prob := float32(0)
			if v > 0.1 {
				prob = 1
			}
			emit(prob)
			p.filled = 0
		}
	}
	return nil
}

// The conversation's VAD cost per second of audio in 20 ms pushes: server_vad plus the squelch,
// each on its own Silero pass (before) and on one shared pass (after).
// go test -run '^$' -bench VADPerSecond ./turn
func BenchmarkVADPerSecond(b *testing.B) {
	needModel(b)
	pcm := sileroTestfile(b, "samples2.pcm")[:rate]
	const push = rate / 50
	run := func(b *testing.B, d Detector, q *squelch.Squelch) {
		b.ReportAllocs()
		pos := int64(0)
		for b.Loop() {
			for at := 0; at < len(pcm); at += push {
				if _, err := d.Feed(pcm[at:at+push], pos); err != nil {
					b.Fatal(err)
				}
				if _, err := q.Push(pcm[at : at+push]); err != nil {
					b.Fatal(err)
				}
				pos += push
			}
		}
	}
	b.Run("two-passes", func(b *testing.B) {
		d, err := NewHush(DefaultHushConfig(silero(sharedModel)))
		if err != nil {
			b.Fatal(err)
		}
		defer d.Close()
		q, err := squelch.New(squelch.Config{Model: sharedModel})
		if err != nil {
			b.Fatal(err)
		}
		defer q.Close()
		run(b, d, q)
	})
	b.Run("one-pass", func(b *testing.B) {
		stream, err := sharedModel.NewStream()
		if err != nil {
			b.Fatal(err)
		}
		pass := Share(stream)
		defer pass.Close()
		reader, _ := pass.NewProber()
		q, err := squelch.New(squelch.Config{Prober: reader})
		if err != nil {
			b.Fatal(err)
		}
		defer q.Close()
		d, err := NewHush(DefaultHushConfig(pass))
		if err != nil {
			b.Fatal(err)
		}
		defer d.Close()
		run(b, d, q)
	})
}
