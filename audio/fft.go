package audio

import "math"

// The power spectrum of one Whisper frame: a real DFT of 400 samples, computed as a 200-point
// complex FFT of the even/odd sample pairs plus the standard split (Numerical Recipes §12.3).
// The 200-point FFT is a self-sorting (Stockham) mixed-radix transform, radices 4·2·5·5, with every
// twiddle precomputed: no allocation, no bit reversal, no interface calls. It replaced gonum's
// fftpack here because the incremental mel's cost was ~70% that FFT (LLM.md, audio).

const (
	fftN    = WhisperNFFT // 400 real samples
	fftHalf = fftN / 2    // 200-point complex transform
)

// fftStage is one radix-r pass of the Stockham transform: ns is the product of the radices before
// it; tw[(j%ns)*r+q] = e^{-2πi·q·(j%ns)/(ns·r)} for input leg q of butterfly j.
type fftStage struct {
	r, ns int
	tw    []complex128
}

var (
	fftStages = func() []fftStage {
		var st []fftStage
		ns := 1
		for _, r := range []int{4, 2, 5, 5} {
			s := fftStage{r: r, ns: ns, tw: make([]complex128, ns*r)}
			for k := range ns {
				for q := range r {
					a := -2 * math.Pi * float64(q*k) / float64(ns*r)
					s.tw[k*r+q] = complex(math.Cos(a), math.Sin(a))
				}
			}
			st = append(st, s)
			ns *= r
		}
		if ns != fftHalf {
			panic("audio: FFT radices do not multiply to 200")
		}
		return st
	}()
	// fftSplit[k] = e^{-2πi·k/400}, the split's twiddle for bin k.
	fftSplit = func() (w [fftHalf + 1]complex128) {
		for k := range w {
			a := -2 * math.Pi * float64(k) / fftN
			w[k] = complex(math.Cos(a), math.Sin(a))
		}
		return w
	}()
)

// Radix-5 constants: cos and sin of 2π/5 and 4π/5.
var (
	c51, s51 = math.Cos(2 * math.Pi / 5), math.Sin(2 * math.Pi / 5)
	c52, s52 = math.Cos(4 * math.Pi / 5), math.Sin(4 * math.Pi / 5)
)

// fftScratch is one worker's buffers.
type fftScratch struct {
	a, b [fftHalf]complex128
}

// power400 sets power[k] = |Σₙ x[n]·e^{-2πi·kn/400}|² for k = 0..200 (len(x) = 400,
// len(power) ≥ 201).
func (s *fftScratch) power400(x []float64, power []float64) {
	x = x[:fftN]
	power = power[:fftHalf+1]
	src, dst := &s.a, &s.b
	for n := range src {
		src[n] = complex(x[2*n], x[2*n+1])
	}
	for i := range fftStages {
		stockham(&fftStages[i], src, dst)
		src, dst = dst, src
	}
	z := src // Z = DFT200(x[even] + i·x[odd])

	// X[k] = E[k] + W^k·O[k], E = (Z[k] + conj Z[200-k])/2, O = -i(Z[k] − conj Z[200-k])/2.
	z0 := z[0]
	power[0] = (real(z0) + imag(z0)) * (real(z0) + imag(z0))
	power[fftHalf] = (real(z0) - imag(z0)) * (real(z0) - imag(z0))
	for k := 1; k < fftHalf; k++ {
		zk, zc := z[k], z[fftHalf-k]
		er, ei := (real(zk)+real(zc))/2, (imag(zk)-imag(zc))/2
		or, oi := (imag(zk)+imag(zc))/2, -(real(zk)-real(zc))/2
		w := fftSplit[k]
		xr := er + real(w)*or - imag(w)*oi
		xi := ei + real(w)*oi + imag(w)*or
		power[k] = xr*xr + xi*xi
	}
}

// stockham runs one stage from src to dst: butterfly j reads src[j + q·N/r] (q < r), twiddles
// them, takes their r-point DFT and writes dst[(j/ns)·ns·r + j%ns + q·ns].
func stockham(st *fftStage, src, dst *[fftHalf]complex128) {
	r, ns := st.r, st.ns
	m := fftHalf / r
	switch r {
	case 2:
		for j := range m {
			k := j % ns
			tw := st.tw[k*2 : k*2+2]
			a, b := src[j], src[j+m]*tw[1]
			d := (j/ns)*ns*2 + k
			dst[d], dst[d+ns] = a+b, a-b
		}
	case 4:
		for j := range m {
			k := j % ns
			tw := st.tw[k*4 : k*4+4]
			x0, x1, x2, x3 := src[j], src[j+m]*tw[1], src[j+2*m]*tw[2], src[j+3*m]*tw[3]
			t0, t1 := x0+x2, x0-x2
			t2, t3 := x1+x3, x1-x3
			t3 = complex(imag(t3), -real(t3)) // −i·t3
			d := (j/ns)*ns*4 + k
			dst[d], dst[d+ns], dst[d+2*ns], dst[d+3*ns] = t0+t2, t1+t3, t0-t2, t1-t3
		}
	case 5:
		for j := range m {
			k := j % ns
			tw := st.tw[k*5 : k*5+5]
			x0, x1, x2, x3, x4 := src[j], src[j+m]*tw[1], src[j+2*m]*tw[2], src[j+3*m]*tw[3], src[j+4*m]*tw[4]
			t1, t2, t3, t4 := x1+x4, x2+x3, x1-x4, x2-x3
			a1 := x0 + complex(c51, 0)*t1 + complex(c52, 0)*t2
			a2 := x0 + complex(c52, 0)*t1 + complex(c51, 0)*t2
			b1 := complex(s51, 0)*t3 + complex(s52, 0)*t4 // X1 = a1 − i·b1, X4 = a1 + i·b1
			b2 := complex(s52, 0)*t3 - complex(s51, 0)*t4 // X2 = a2 − i·b2, X3 = a2 + i·b2
			ib1 := complex(-imag(b1), real(b1))
			ib2 := complex(-imag(b2), real(b2))
			d := (j/ns)*ns*5 + k
			dst[d] = x0 + t1 + t2
			dst[d+ns], dst[d+4*ns] = a1-ib1, a1+ib1
			dst[d+2*ns], dst[d+3*ns] = a2-ib2, a2+ib2
		}
	default:
		panic("audio: no butterfly for this radix")
	}
}
