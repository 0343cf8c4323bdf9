package audio

import (
	"math"
	"math/cmplx"
	"math/rand/v2"
	"strconv"
	"testing"

	"gonum.org/v1/gonum/dsp/fourier"
)

// naivePower is |DFT400(x)|² written out, O(n²).
func naivePower(x []float64) []float64 {
	p := make([]float64, fftHalf+1)
	for k := range p {
		var s complex128
		for n, v := range x {
			s += complex(v, 0) * cmplx.Exp(complex(0, -2*math.Pi*float64(k*n)/fftN))
		}
		p[k] = real(s)*real(s) + imag(s)*imag(s)
	}
	return p
}

func TestPower400MatchesDFT(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(11, 12))
	var s fftScratch
	got := make([]float64, fftHalf+1)
	inputs := map[string][]float64{}
	for _, at := range []int{0, 1, 2, 3, 4, 5, 7, 8, 40, 199, 200, 201, 399} {
		x := make([]float64, fftN)
		x[at] = 1
		inputs["impulse at "+strconv.Itoa(at)] = x
	}
	for _, bin := range []int{0, 1, 2, 3, 17, 50, 99, 100, 101, 150, 199, 200} {
		x := make([]float64, fftN)
		for n := range x {
			x[n] = math.Cos(2*math.Pi*float64(bin*n)/fftN) + 0.5*math.Sin(2*math.Pi*float64((bin+37)*n)/fftN)
		}
		inputs["tones at "+strconv.Itoa(bin)] = x
	}
	for i := range 20 {
		x := make([]float64, fftN)
		for n := range x {
			x[n] = rng.NormFloat64()
		}
		inputs["noise "+strconv.Itoa(i)] = x
	}
	for name, x := range inputs {
		want := naivePower(x)
		s.power400(x, got)
		var scale float64
		for _, w := range want {
			scale = max(scale, w)
		}
		for k := range want {
			if math.Abs(got[k]-want[k]) > 1e-9*max(1, scale) {
				t.Fatalf("%s: bin %d: FFT %v, DFT %v", name, k, got[k], want[k])
			}
		}
	}
}

// BenchmarkFFT400: one frame's power spectrum, ours against gonum's fftpack (the former path).
func BenchmarkFFT400(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	x := make([]float64, fftN)
	for n := range x {
		x[n] = rng.NormFloat64()
	}
	power := make([]float64, fftHalf+1)
	b.Run("stockham", func(b *testing.B) {
		var s fftScratch
		for b.Loop() {
			s.power400(x, power)
		}
	})
	b.Run("gonum", func(b *testing.B) {
		f := fourier.NewFFT(fftN)
		coeffs := make([]complex128, fftHalf+1)
		for b.Loop() {
			f.Coefficients(coeffs, x)
			for k, c := range coeffs {
				power[k] = real(c)*real(c) + imag(c)*imag(c)
			}
		}
	})
}
