package audio

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// The rate pairs voiced uses: clients and WAV uploads to Whisper's 16 kHz, Kokoro's 24 kHz out
// to 16 kHz (the round trip) and 16 kHz up to 24 kHz (realtime pcm16), telephony both ways.
var ratePairs = [][2]int{
	{24000, 16000}, {48000, 16000}, {44100, 16000}, {8000, 16000}, {16000, 24000},
	{22050, 16000}, {16000, 8000}, {32000, 16000}, {16000, 48000},
	{44101, 16000}, // an odd pair: too many phases to tabulate, interpolated from a dense kernel
}

func TestResampleKernelKinds(t *testing.T) {
	t.Parallel()
	if k := kernelFor(24000, 16000); k.phases == nil || len(k.phases) != 2 || k.m != 3 || len(k.phases[0]) != 2*k.half {
		t.Fatalf("24k→16k: want 2 exact phases of 2H taps, got L=%d M=%d", k.l, k.m)
	}
	if k := kernelFor(44101, 16000); k.phases != nil || k.dense == nil || k.res < denseMin {
		t.Fatalf("44101→16000: want a dense interpolated kernel, got %d phases", len(k.phases))
	}
}

func sine(n, rate int, freq, amp, phase float64) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(amp * math.Sin(2*math.Pi*freq*float64(i)/float64(rate)+phase))
	}
	return out
}

// fitSine least-squares fits a·cos + b·sin at freq to x and returns the amplitude and the RMS of
// what is left.
func fitSine(x []float32, rate int, freq float64) (amp, residual float64) {
	cos, sin := make([]float64, len(x)), make([]float64, len(x))
	w := 2 * math.Pi * freq / float64(rate)
	stepC, stepS := math.Cos(w), math.Sin(w)
	c, s := 1.0, 0.0
	for i := range x {
		if i%1024 == 0 { // re-anchor the rotation so rounding cannot drift
			c, s = math.Cos(w*float64(i)), math.Sin(w*float64(i))
		}
		cos[i], sin[i] = c, s
		c, s = c*stepC-s*stepS, s*stepC+c*stepS
	}
	var cc, ss, cs, xc, xs float64
	for i, v := range x {
		cc += cos[i] * cos[i]
		ss += sin[i] * sin[i]
		cs += cos[i] * sin[i]
		xc += float64(v) * cos[i]
		xs += float64(v) * sin[i]
	}
	det := cc*ss - cs*cs
	a := (xc*ss - xs*cs) / det
	b := (xs*cc - xc*cs) / det
	var r float64
	for i, v := range x {
		e := float64(v) - a*cos[i] - b*sin[i]
		r += e * e
	}
	return math.Hypot(a, b), math.Sqrt(r / float64(len(x)))
}

func dB(x float64) float64 { return 20 * math.Log10(x) }

// TestResampleQuality measures each pair with pure tones: passband gain across 0–0.9 of the lower
// Nyquist (ripple), everything else in the output of a passband tone (aliases, images, rounding),
// and, going down, what is left of tones above the output Nyquist (stop-band attenuation).
func TestResampleQuality(t *testing.T) {
	t.Parallel()
	const amp = 0.5
	for _, pair := range ratePairs {
		from, to := pair[0], pair[1]
		t.Run(fmt.Sprintf("%d→%d", from, to), func(t *testing.T) {
			minNyq := float64(min(from, to)) / 2
			n := from / 8    // 125 ms
			trim := to / 100 // skip 10 ms at each edge, beyond the filter's reach
			lo, hi, worstResidual := math.Inf(1), math.Inf(-1), math.Inf(-1)
			for f := 20.0; f <= 0.9*minNyq; f += minNyq / 37 {
				out := Resample(sine(n, from, f, amp, 0.3), from, to)
				a, res := fitSine(out[trim:len(out)-trim], to, f)
				g := dB(a / amp)
				lo, hi = min(lo, g), max(hi, g)
				worstResidual = max(worstResidual, dB(res/(amp/math.Sqrt2)))
			}
			if hi-lo > 0.1 || math.Abs(hi) > 0.05 || math.Abs(lo) > 0.05 {
				t.Errorf("passband 0–%.0f Hz: gain %.4f…%.4f dB, want within ±0.05", 0.9*minNyq, lo, hi)
			}
			if worstResidual > -60 {
				t.Errorf("passband tones leave %.1f dB of other content, want ≤ -60", worstResidual)
			}
			// Going up, the images of passband tones are part of "other content"; going down,
			// tones above the output Nyquist must vanish.
			stop := math.Inf(1)
			if to < from {
				for f := minNyq; f < float64(from)/2; f += float64(from) / 2 / 61 {
					out := Resample(sine(n, from, f, amp, 0.3), from, to)
					stop = min(stop, -dB(RMS(out[trim:len(out)-trim])/(amp/math.Sqrt2)))
				}
				if stop < 60 {
					t.Errorf("stop band (≥ %.0f Hz): %.1f dB of attenuation, want ≥ 60", minNyq, stop)
				}
			}
			stopText := "n/a going up"
			if to < from {
				stopText = fmt.Sprintf("%.1f dB", stop)
			}
			t.Logf("passband ripple %.5f dB (gain %+.5f…%+.5f dB), other content ≤ %.1f dB, stop-band attenuation %s, %d taps/output",
				hi-lo, lo, hi, worstResidual, stopText, 2*kernelFor(from, to).half)
		})
	}
}

// Whisper hears the codec fixture's tones up to ~5.9 kHz after 24k→16k: flat to 6.5 kHz.
func TestResampleFlatTo6500(t *testing.T) {
	t.Parallel()
	for f := 100.0; f <= 6500; f += 100 {
		out := Resample(sine(12000, 24000, f, 0.5, 0), 24000, 16000)
		a, _ := fitSine(out[400:len(out)-400], 16000, f)
		if g := dB(a / 0.5); math.Abs(g) > 0.1 {
			t.Fatalf("%.0f Hz: %.3f dB", f, g)
		}
	}
}

func TestResampleStreamingEqualsOneShot(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, pair := range append(ratePairs, [2]int{16000, 16000}, [2]int{16001, 16000}) {
		from, to := pair[0], pair[1]
		t.Run(fmt.Sprintf("%d→%d", from, to), func(t *testing.T) {
			in := make([]float32, from/3+rng.IntN(1000))
			for i := range in {
				in[i] = rng.Float32()*2 - 1
			}
			want := Resample(in, from, to)
			if n := (len(in)*to + from - 1) / from; len(want) != n {
				t.Fatalf("one-shot gave %d samples for %d in, want %d", len(want), len(in), n)
			}
			r, err := NewResampler(from, to)
			if err != nil {
				t.Fatal(err)
			}
			for trial := range 4 {
				var got []float32
				for rest := in; len(rest) > 0; {
					size := rng.IntN(max(2, len(rest)/(3+trial*10))) // includes empty chunks and single samples
					size = min(size, len(rest))
					got = append(got, r.Process(rest[:size])...)
					rest = rest[size:]
				}
				got = append(got, r.Flush()...) // also resets r for the next trial
				if len(got) != len(want) {
					t.Fatalf("trial %d: streaming gave %d samples, one-shot %d", trial, len(got), len(want))
				}
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("trial %d: sample %d: streaming %v, one-shot %v", trial, i, got[i], want[i])
					}
				}
			}
		})
	}
}

// A band-limited signal (tones up to 6 kHz) goes 24k→16k→24k and comes back aligned: no group
// delay to compensate, since the filter is centred.
func TestResampleRoundTripAligned(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	x := make([]float32, 24000)
	for range 40 {
		f, ph := 50+rng.Float64()*5950, rng.Float64()*2*math.Pi
		for i, v := range sine(len(x), 24000, f, 0.02, ph) {
			x[i] += v
		}
	}
	y := Resample(Resample(x, 24000, 16000), 16000, 24000)
	if len(y) != len(x) {
		t.Fatalf("round trip gave %d samples from %d", len(y), len(x))
	}
	mid := func(s []float32) []float32 { return s[1000 : len(s)-1000] }
	best, bestLag := math.Inf(1), 0
	for lag := -3; lag <= 3; lag++ {
		var e float64
		a, b := mid(x), y[1000+lag:len(y)-1000+lag]
		for i := range a {
			d := float64(a[i] - b[i])
			e += d * d
		}
		if e < best {
			best, bestLag = e, lag
		}
	}
	errDB := dB(math.Sqrt(best/float64(len(mid(x)))) / RMS(mid(x)))
	if bestLag != 0 || errDB > -60 {
		t.Fatalf("round trip: best lag %d, error %.1f dB; want lag 0, ≤ -60 dB", bestLag, errDB)
	}
	t.Logf("24k→16k→24k: lag 0, error %.1f dB relative to the signal", errDB)
}

func TestResampleEdges(t *testing.T) {
	t.Parallel()
	if got := Resample(nil, 24000, 16000); len(got) != 0 {
		t.Fatalf("empty input gave %d samples", len(got))
	}
	if got := Resample([]float32{1}, 24000, 16000); len(got) != 1 {
		t.Fatalf("one sample gave %d", len(got))
	}
	// DC stays DC away from the edges.
	ones := make([]float32, 4800)
	for i := range ones {
		ones[i] = 0.5
	}
	for i, v := range Resample(ones, 44100, 16000)[200:1500] {
		if math.Abs(float64(v)-0.5) > 1e-5 {
			t.Fatalf("DC sample %d = %v", i, v)
		}
	}
	for name, rates := range map[string][2]int{"zero": {0, 16000}, "negative": {16000, -1}, "huge": {16000, 1 << 30}} {
		if _, err := NewResampler(rates[0], rates[1]); !errors.Is(err, ErrRate) {
			t.Errorf("%s: err = %v, want ErrRate", name, err)
		}
	}
}

func BenchmarkResample(b *testing.B) {
	for _, pair := range [][2]int{{24000, 16000}, {48000, 16000}, {44100, 16000}, {8000, 16000}, {16000, 24000}} {
		from, to := pair[0], pair[1]
		b.Run(fmt.Sprintf("%d→%d", from, to), func(b *testing.B) {
			in := sine(from, from, 440, 0.5, 0) // one second
			r, _ := NewResampler(from, to)
			b.ReportAllocs()
			for b.Loop() {
				for i := 0; i < len(in); i += from / 50 { // 20 ms chunks, as a session streams
					r.Process(in[i:min(i+from/50, len(in))])
				}
				r.Flush()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e9*1000, "ms/audio-s")
		})
	}
}
