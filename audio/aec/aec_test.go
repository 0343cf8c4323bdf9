package aec

import (
	"errors"
	"testing"
	"time"
)

func TestPassThroughOneFrameLate(t *testing.T) {
	f, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	in := make([]float32, 3*FrameSamples+37)
	for i := range in {
		in[i] = float32(i%100) / 200
	}
	var out []float32
	for i := 0; i < len(in); i += 123 {
		got := f.Process(in[i:min(i+123, len(in))])
		if len(got) != min(123, len(in)-i) {
			t.Fatalf("Process returned %d samples for %d", len(got), min(123, len(in)-i))
		}
		out = append(out, got...)
	}
	for i := range Latency {
		if out[i] != 0 {
			t.Fatalf("sample %d before the latency is %v, want silence", i, out[i])
		}
	}
	for i := Latency; i < len(out); i++ {
		if d := out[i] - in[i-Latency]; d > 1.0/16384 || d < -1.0/16384 {
			t.Fatalf("sample %d = %v, want %v (the input one frame late)", i, out[i], in[i-Latency])
		}
	}
}

func TestFarBoundedAndDropped(t *testing.T) {
	for _, eng := range []Engine{WebRTC, Speex} {
		f, err := New(Config{Echo: true, Engine: eng})
		if err != nil {
			t.Fatal(err)
		}
		at := time.Now()
		f.SetClock(func() time.Time { return at }) // the microphone streams as the reply plays
		f.Far(make([]float32, MaxFar-10))
		f.Far(make([]float32, 100))
		if got := f.FarQueued(); got != MaxFar {
			t.Errorf("engine %d: %d queued, want the bound %d", eng, got, MaxFar)
		}
		f.Process(make([]float32, 2*FrameSamples))
		if got := f.FarQueued(); got != MaxFar-2*FrameSamples {
			t.Errorf("engine %d: %d queued after two frames, want %d (one reference sample per microphone sample)", eng, got, MaxFar-2*FrameSamples)
		}
		f.DropFar()
		if got := f.FarQueued(); got != 0 {
			t.Errorf("engine %d: %d queued after DropFar", eng, got)
		}
		f.Close()
	}
}

func TestNoReferenceWithoutEcho(t *testing.T) {
	f, err := New(Config{SuppressDB: SuppressNearField})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Far(make([]float32, 1000))
	if f.FarQueued() != 0 {
		t.Error("a Filter without Echo queued a reference")
	}
}

func TestBadConfig(t *testing.T) {
	for _, c := range []Config{{TailMs: 5}, {TailMs: 5000}, {SuppressDB: 3}, {SuppressDB: -90}} {
		if _, err := New(c); !errors.Is(err, ErrConfig) {
			t.Errorf("New(%+v) = %v, want ErrConfig", c, err)
		}
	}
}

// TestDelayFound: a reference whose echo reaches the microphone 150 ms late (bursts of noise
// with a speech-like envelope, an attenuated copy plus hiss): the Filter finds the bulk delay
// and feeds the canceller and the gate the reference that much later (less the slack).
func TestDelayFound(t *testing.T) {
	f, err := New(Config{Echo: true})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	at := time.Now()
	f.SetClock(func() time.Time { return at }) // a microphone in real time: nothing expires
	const delay = 150 * Rate / 1000
	ref, rnd := bursts(5 * Rate)
	mic := make([]float32, len(ref))
	for i := range mic {
		if i >= delay {
			mic[i] = 0.3 * ref[i-delay]
		}
		mic[i] += 0.001 * rnd()
	}
	f.Far(ref)
	for i := 0; i < len(mic); i += 320 {
		f.Process(mic[i : i+320])
	}
	if want := delay/FrameSamples - delaySlack; !f.dl.known || f.dl.cur != want {
		t.Errorf("reference delayed %d frames (known %v), want %d (150 ms less the slack)", f.dl.cur, f.dl.known, want)
	}
}

// bursts is n samples of a noise reference in 100 ms bursts at three levels (every third one
// silent), and the generator that made them, for the microphone's own noise.
func bursts(n int) (ref []float32, rnd func() float32) {
	seed := uint32(7)
	rnd = func() float32 {
		seed = seed*1664525 + 1013904223
		return float32(seed>>8)/float32(1<<24) - 0.5
	}
	ref = make([]float32, n)
	for i := range ref {
		ref[i] = 0.1 * float32((i/1600)%3) * rnd()
	}
	return ref, rnd
}

// No echo at all (headphones, a client cancelling its own): the delay estimator finds no lag the
// microphone's energy follows, so noEcho holds and the gate does not weigh speech against a
// 0 dB echo it never heard; with an echo the same reference is followed and noEcho does not.
func TestNoEchoFound(t *testing.T) {
	for _, echo := range []bool{false, true} {
		f, err := New(Config{Echo: true})
		if err != nil {
			t.Fatal(err)
		}
		at := time.Now()
		f.SetClock(func() time.Time { return at })
		ref, rnd := bursts(3 * Rate)
		mic := make([]float32, len(ref))
		for i := range mic {
			if echo && i >= 960 {
				mic[i] = 0.3 * ref[i-960]
			}
			mic[i] += 0.001 * rnd()
		}
		f.Far(ref)
		for i := 0; i < len(mic); i += 320 {
			f.Process(mic[i : i+320])
		}
		if got := f.dl.noEcho(); got == echo {
			t.Errorf("echo %v: noEcho %v (best correlation %.2f over %.0f frames)", echo, got, f.dl.best, f.dl.n)
		}
		f.Close()
	}
}

// The reference is a wall-clock schedule: a client that played a reply while sending no
// microphone audio and speaks afterwards is not cleaned against the reply; one that streams its
// microphone in real time (up to the tail late) consumes the reference sample for sample.
func TestReferenceExpiresByWallClock(t *testing.T) {
	at := time.Unix(1e9, 0)
	step := func(d time.Duration) { at = at.Add(d) }
	newF := func() *Filter {
		f, err := New(Config{Echo: true})
		if err != nil {
			t.Fatal(err)
		}
		f.SetClock(func() time.Time { return at })
		return f
	}
	mic := make([]float32, 320) // 20 ms

	// Half duplex: 2 s sent in a burst, 3 s without microphone audio, then the user speaks.
	f := newF()
	defer f.Close()
	f.Far(make([]float32, 2*Rate))
	step(3 * time.Second)
	f.Process(mic)
	if q := f.FarQueued(); q != 0 {
		t.Errorf("half duplex: %d samples of a reply that finished playing a second ago are still queued; want none", q)
	}

	// Full duplex, the microphone 300 ms late (within the 400 ms tail): nothing is dropped.
	g := newF()
	defer g.Close()
	g.Far(make([]float32, 2*Rate))
	step(300 * time.Millisecond)
	for i := 1; i <= 50; i++ {
		step(20 * time.Millisecond)
		g.Process(mic)
		if q, want := g.FarQueued(), 2*Rate-i*320; q != want {
			t.Fatalf("full duplex, append %d: %d samples queued, want %d (one per microphone sample)", i, q, want)
		}
	}

	// Two replies queued back to back play one after the other: the second is not dropped
	// while the first plays. Then a pause in the microphone: what played during it goes.
	h := newF()
	defer h.Close()
	h.Far(make([]float32, Rate))
	h.Far(make([]float32, Rate))
	step(1500 * time.Millisecond)
	h.Process(mic)
	// Played by now: 1.5 s; what began more than the tail before the append's start (1.08 s) goes.
	if q, want := h.FarQueued(), 2*Rate-int(1080*Rate/1000)-320; q != want {
		t.Errorf("back to back, 1.5 s in: %d samples queued, want %d", q, want)
	}
}
