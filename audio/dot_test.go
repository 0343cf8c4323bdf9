package audio

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"
)

// dot4 gives dotGo's sums bit for bit, four different pairs at once, at every length up to
// past the 24→16 kHz kernel's 152 taps (so every tail), over x longer than c; and dotGo is the
// product it claims to be (to float32 rounding of the float64 sum).
func TestDot4MatchesGo(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 0; n <= 200; n++ {
		var c, x [4][]float32
		for k := range c {
			c[k], x[k] = make([]float32, n), make([]float32, n+7)
			for i := range c[k] {
				c[k][i] = float32(rng.NormFloat64() * 0.1)
			}
			for i := range x[k] {
				x[k][i] = float32(rng.Float64()*2 - 1)
			}
		}
		var sums [4]float32
		dot4(&c, &x, &sums)
		for k := range c {
			if want := dotGo(c[k], x[k]); math.Float32bits(sums[k]) != math.Float32bits(want) {
				t.Fatalf("n=%d pair %d: dot4 %v, dotGo %v", n, k, sums[k], want)
			}
			var exact, mag float64
			for i := range c[k] {
				exact += float64(c[k][i]) * float64(x[k][i])
				mag += math.Abs(float64(c[k][i]) * float64(x[k][i]))
			}
			if got := dotGo(c[k], x[k]); math.Abs(float64(got)-exact) > 1e-6*mag+1e-12 {
				t.Fatalf("n=%d: dotGo %v, exact %v", n, got, exact)
			}
		}
	}
}

// referenceResample is the resampler's definition computed plainly: output n = Σ over the
// phase p = n·M mod L of its taps times the inputs around q = ⌊n·M/L⌋, silence outside; in
// float64, or (goSums) in float32 as dotGo sums, the arithmetic the resampler has always had.
// Exact-phase kernels only.
func referenceResample(in []float32, from, to int, goSums bool) []float32 {
	k := newKernel(from, to)
	l, m := int64(k.l), int64(k.m)
	n := (int64(len(in))*l + m - 1) / m
	out := make([]float32, n)
	window := make([]float32, 2*k.half)
	for i := range out {
		pos := int64(i) * m
		q, p := pos/l, pos%l
		for j := range window {
			window[j] = 0
			if at := q - int64(k.half) + 1 + int64(j); at >= 0 && at < int64(len(in)) {
				window[j] = in[at]
			}
		}
		if goSums {
			out[i] = dotGo(k.phases[p], window)
			continue
		}
		var s float64
		for j, c := range k.phases[p] {
			s += float64(c) * float64(window[j])
		}
		out[i] = float32(s)
	}
	return out
}

// Real speech (jfk.wav, made 24 and 48 kHz), streamed in 20 ms appends as a session does and
// flushed, is bit for bit what the resampler gave before dot4 (each output dotGo's sum over its
// phase and window), and within float32 rounding of the float64 sum (2e-6 of full scale, a
// hundredth of one 16-bit step). A wrong phase, tap offset or lost tail is off by far more.
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
				in = referenceResample(speech16, 16000, from, false)
			}
			want := referenceResample(in, from, to, false)
			same := referenceResample(in, from, to, true)
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
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(same[i]) {
					t.Fatalf("sample %d = %v, the Go sums give %v", i, got[i], same[i])
				}
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

// BenchmarkDot: the 24→16 kHz kernel's outputs (152 taps), four at a time: dotGo four times
// against dot4.
func BenchmarkDot(b *testing.B) {
	k := newKernel(24000, 16000)
	var c, x [4][]float32
	for i := range c {
		c[i], x[i] = k.phases[i%2], sine(24000, len(k.phases[0])+i, 440, 0.5, 0)[i:]
	}
	var sums [4]float32
	b.Run("go", func(b *testing.B) {
		for b.Loop() {
			for i := range c {
				sums[i] = dotGo(c[i], x[i])
			}
		}
	})
	b.Run("dot4", func(b *testing.B) {
		for b.Loop() {
			dot4(&c, &x, &sums)
		}
	})
}
