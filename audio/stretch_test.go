package audio

import (
	"math"
	"testing"
)

// dominantHz is the frequency of x's zero crossings.
func dominantHz(x []float32, rate int) float64 {
	crossings := 0
	for i := 1; i < len(x); i++ {
		if (x[i-1] < 0) != (x[i] < 0) {
			crossings++
		}
	}
	return float64(crossings) / 2 / (float64(len(x)) / float64(rate))
}

// TestStretchKeepsPitch: at every factor the length is len/factor and a 440 Hz tone stays 440 Hz
// (resampling instead would move it to 440·factor), at its level.
func TestStretchKeepsPitch(t *testing.T) {
	const rate = 24000
	x := make([]float32, rate)
	for i := range x {
		x[i] = 0.5 * float32(math.Sin(2*math.Pi*440*float64(i)/rate))
	}
	for _, f := range []float64{0.5, 0.8, 1.5, 2, 2.5} {
		y := Stretch(x, rate, f)
		if want := int(math.Round(rate / f)); len(y) != want {
			t.Fatalf("factor %g: %d samples, want %d", f, len(y), want)
		}
		mid := y[len(y)/10 : len(y)*9/10]
		hz, rms := dominantHz(mid, rate), RMS(mid)
		t.Logf("factor %g: %d samples, %.1f Hz, rms %.3f", f, len(y), hz, rms)
		if math.Abs(hz-440) > 5 {
			t.Errorf("factor %g: %.1f Hz, want 440", f, hz)
		}
		if math.Abs(rms-0.3536) > 0.03 {
			t.Errorf("factor %g: rms %.3f, want 0.354", f, rms)
		}
	}
}

func BenchmarkStretch2x(b *testing.B) {
	const rate = 24000
	x := make([]float32, rate)
	for i := range x {
		x[i] = float32(math.Sin(float64(i) * 0.05))
	}
	for b.Loop() {
		Stretch(x, rate, 2)
	}
}
