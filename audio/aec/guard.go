package aec

import "math"

// The residual-echo gate's echo estimate works on band powers of the reference and the
// microphone: a 256-sample Hann window (16 ms) each 10 ms frame.
const specN = 256

// bandEdges are the FFT bins (62.5 Hz each at Rate) that bound the gate's bands: about a third
// of an octave above 500 Hz, 125 Hz below.
var bandEdges = []int{2, 4, 6, 8, 10, 12, 15, 18, 22, 26, 31, 37, 44, 53, 64, 77, 92, 110, 129}

const nBands = 18

// spec is one signal's sliding window and its band powers.
type spec struct {
	hist []float64 // the last specN samples
	x    []complex128
	band [nBands]float64
}

var hann = func() []float64 {
	w := make([]float64, specN)
	for i := range w {
		w[i] = 0.5 - 0.5*math.Cos(2*math.Pi*float64(i)/specN)
	}
	return w
}()

func newSpec() *spec { return &spec{hist: make([]float64, specN), x: make([]complex128, specN)} }

// push adds a frame and computes the band powers of the last specN samples.
func (s *spec) push(fr []int16) {
	copy(s.hist, s.hist[len(fr):])
	for i, v := range fr {
		s.hist[specN-len(fr)+i] = float64(v) / 32768
	}
	for i, v := range s.hist {
		s.x[i] = complex(v*hann[i], 0)
	}
	fft(s.x)
	for b := range nBands {
		var e float64
		for k := bandEdges[b]; k < bandEdges[b+1]; k++ {
			a := s.x[k]
			e += real(a)*real(a) + imag(a)*imag(a)
		}
		s.band[b] = e
	}
}

// twiddle[k] = e^(−2πik/specN), k < specN/2.
var twiddle = func() []complex128 {
	t := make([]complex128, specN/2)
	for k := range t {
		a := -2 * math.Pi * float64(k) / specN
		t[k] = complex(math.Cos(a), math.Sin(a))
	}
	return t
}()

// fft is an in-place radix-2 FFT of specN points.
func fft(x []complex128) {
	n := len(x)
	for i, j := 1, 0; i < n; i++ {
		bit := n >> 1
		for ; j&bit != 0; bit >>= 1 {
			j ^= bit
		}
		j ^= bit
		if i < j {
			x[i], x[j] = x[j], x[i]
		}
	}
	for size := 2; size <= n; size <<= 1 {
		half, step := size/2, n/size
		for start := 0; start < n; start += size {
			for k := range half {
				a, b := x[start+k], x[start+k+half]*twiddle[k*step]
				x[start+k], x[start+k+half] = a+b, a-b
			}
		}
	}
}

// guard is the residual-echo gate's gain for this output frame (1: pass): out, what the
// canceller made of mic, passes while the microphone holds more than the echo the aligned
// reference can cause explains, and for guardHoldFrames after; otherwise it is zeroed. Run
// after the canceller, with f.ref the aligned reference frame it was given.
func (f *Filter) guard(mic, out []int16) float32 {
	if !f.guardOn {
		return 1
	}
	f.detect(mic)
	if f.peak <= guardFloor {
		f.hold = 0
		return 1 // no reference within the tail: nothing to echo
	}
	f.learn(mic, out)
	if f.near {
		f.hold = guardHoldFrames
		return 1
	}
	if f.hold > 0 {
		f.hold-- // a talker found: the quieter frames of their words pass too
		return 1
	}
	return f.depthLin
}

// detect updates the band powers and the echo estimate with this frame and says whether the
// microphone holds more than the estimate explains (f.near): per band, the echo is at most the
// aligned reference's loudest power over the tail times the band's echo path gain (0 dB until
// learned; −30 dB while the delay estimator finds no echo at all, delayEst.noEcho), plus twice
// the noise floor; near when the microphone's power over that, with GuardMarginDB, is more than
// half its power.
func (f *Filter) detect(mic []int16) {
	f.rs.push(f.ref)
	f.ms.push(mic)
	f.bRing[f.ringAt] = f.rs.band
	f.eRing[f.ringAt] = meanSquare(f.ref)
	f.ringAt = (f.ringAt + 1) % len(f.bRing)
	for b, m := range f.ms.band {
		if m < f.noise[b] {
			f.noise[b] = m
		} else {
			f.noise[b] *= noiseRise
		}
	}
	clear(f.pk[:])
	for _, r := range f.bRing {
		for b, v := range r {
			f.pk[b] = max(f.pk[b], v)
		}
	}
	f.peak = 0
	for _, v := range f.eRing {
		f.peak = max(f.peak, v)
	}
	f.near = false
	if f.peak <= guardFloor {
		return
	}
	noEcho := f.dl.noEcho()
	var over, tot float64
	for b := range nBands {
		m := f.ms.band[b]
		g := f.gLin[b]
		if noEcho && f.gN[b] < erlLearnFrames {
			g = quietEchoGain // no echo heard at all: not the 0 dB a band starts at
		}
		over += max(0, m-f.marginLin*(g*f.pk[b]+2*f.noise[b]))
		tot += m
	}
	f.near = tot > 0 && over > 0.5*tot
}

// learn updates the echo path's gain per band from a frame the canceller cut by 10 dB or more
// while no talker was found (an echo-only frame): an upper envelope of the microphone's band
// power over the reference's, fast up, slow down.
func (f *Filter) learn(mic, out []int16) {
	me, oe := meanSquare(mic), meanSquare(out)
	if f.near || f.hold > 0 || me <= f.peak*1e-5 || oe >= me*0.1 {
		return
	}
	pmax := 0.0
	for _, v := range f.pk {
		pmax = max(pmax, v)
	}
	for b := range nBands {
		if f.pk[b] < pmax*1e-4 || f.ms.band[b] < 4*f.noise[b] {
			continue // a band the reference barely reaches, or the noise alone
		}
		r := 10 * math.Log10(f.ms.band[b]/f.pk[b])
		switch {
		case f.gN[b] == 0:
			f.gDB[b] = r
		case r > f.gDB[b]:
			f.gDB[b] += 0.5 * (r - f.gDB[b])
		default:
			f.gDB[b] += 0.01 * (r - f.gDB[b])
		}
		f.gN[b]++
		if f.gN[b] >= erlLearnFrames {
			f.gLin[b] = math.Pow(10, min(f.gDB[b], maxEchoGainDB)/10)
		}
	}
}
