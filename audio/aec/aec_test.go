package aec

import (
	"errors"
	"testing"
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
	const delay = 150 * Rate / 1000
	seed := uint32(7)
	rnd := func() float32 {
		seed = seed*1664525 + 1013904223
		return float32(seed>>8)/float32(1<<24) - 0.5
	}
	ref := make([]float32, 5*Rate)
	for i := range ref {
		burst := (i / 1600) % 3 // 100 ms bursts, every third one silent
		amp := float32(0.1 * float32(burst))
		ref[i] = amp * rnd()
	}
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
