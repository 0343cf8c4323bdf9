package audio

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"
)

// dot and each implementation of it (Go, and SSE and AVX2 where this CPU runs them) against
// float64 arithmetic, at every length up to past the 24→16 kHz kernel's 152 taps (so every
// tail of the wide loops), over x longer than c.
func TestDotMatchesGo(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 0; n <= 200; n++ {
		c, x := make([]float32, n), make([]float32, n+7)
		for i := range c {
			c[i] = float32(rng.NormFloat64() * 0.1)
		}
		for i := range x {
			x[i] = float32(rng.Float64()*2 - 1)
		}
		var exact, mag float64
		for i := range c {
			exact += float64(c[i]) * float64(x[i])
			mag += math.Abs(float64(c[i]) * float64(x[i]))
		}
		tol := 1e-6*mag + 1e-12
		for name, f := range dotVariants() {
			if got := f(c, x[:n]); math.Abs(float64(got)-exact) > tol {
				t.Fatalf("n=%d: %s %v, exact %v (tolerance %g)", n, name, got, exact, tol)
			}
		}
		if got := dot(c, x); math.Abs(float64(got)-exact) > tol {
			t.Fatalf("n=%d: dot %v, exact %v (tolerance %g)", n, got, exact, tol)
		}
	}
}

// referenceResample is the resampler's definition computed plainly: output n = Σ over the
// phase p = n·M mod L of its taps times the inputs around q = ⌊n·M/L⌋, silence outside, in
// float64. Exact-phase kernels only.
func referenceResample(in []float32, from, to int) []float32 {
	k := newKernel(from, to)
	l, m := int64(k.l), int64(k.m)
	n := (int64(len(in))*l + m - 1) / m
	out := make([]float32, n)
	for i := range out {
		pos := int64(i) * m
		q, p := pos/l, pos%l
		var s float64
		for j, c := range k.phases[p] {
			if at := q - int64(k.half) + 1 + int64(j); at >= 0 && at < int64(len(in)) {
				s += float64(c) * float64(in[at])
			}
		}
		out[i] = float32(s)
	}
	return out
}

// Real speech (jfk.wav, made 24 and 48 kHz), streamed in 20 ms appends as a session does and
// flushed, matches the reference to within float32 rounding: 2e-6 of full scale, a hundredth of
// one 16-bit step. A wrong phase, tap offset or lost tail is off by far more.
func TestResampleSpeechMatchesReference(t *testing.T) {
	t.Parallel()
	f, err := os.Open(sharedData(t, "whisper", "jfk.wav"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	speech16, rate, err := DecodeWAV(f)
	if err != nil || rate != 16000 {
		t.Fatalf("jfk.wav: rate %d, %v", rate, err)
	}
	for _, pair := range [][2]int{{24000, 16000}, {48000, 16000}, {8000, 16000}, {16000, 24000}} {
		from, to := pair[0], pair[1]
		t.Run(fmt.Sprintf("%d→%d", from, to), func(t *testing.T) {
			in := speech16
			if from != 16000 {
				in = referenceResample(speech16, 16000, from)
			}
			want := referenceResample(in, from, to)
			r, err := NewResampler(from, to)
			if err != nil {
				t.Fatal(err)
			}
			var got []float32
			for i := 0; i < len(in); i += from / 50 {
				got = r.ProcessTo(got, in[i:min(i+from/50, len(in))])
			}
			got = append(got, r.Flush()...)
			if len(got) != len(want) {
				t.Fatalf("%d samples, want %d", len(got), len(want))
			}
			worst, at := 0.0, 0
			for i := range got {
				if d := math.Abs(float64(got[i] - want[i])); d > worst {
					worst, at = d, i
				}
			}
			if worst > 2e-6 {
				t.Fatalf("sample %d off by %g (got %v, want %v)", at, worst, got[at], want[at])
			}
			t.Logf("%d samples, worst difference %.2g of full scale", len(got), worst)
		})
	}
}

// BenchmarkDot: one output of the 24→16 kHz kernel (152 taps), each implementation.
func BenchmarkDot(b *testing.B) {
	k := newKernel(24000, 16000)
	c := k.phases[1]
	x := sine(24000, len(c), 440, 0.5, 0)
	for name, f := range dotVariants() {
		b.Run(name, func(b *testing.B) {
			var s float32
			for b.Loop() {
				s += f(c, x)
			}
			_ = s
		})
	}
}
