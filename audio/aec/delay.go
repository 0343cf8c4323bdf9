package aec

import "math"

// delayEst estimates the echo's bulk delay (whole frames) from the correlation of the
// reference's and the microphone's log energy envelopes, and delays the reference by it (less
// a little slack) before the canceller and the gate see it.
type delayEst struct {
	lags int
	hist [][]int16 // raw reference frames, hist[(at-k)%len] is k frames ago
	env  []float64 // their log10 energies (floored at −60 dB)
	at   int
	// Exponentially weighted sums (delayForget) for the correlation of the microphone's log
	// energy (y) with the reference's k frames earlier (x[k]), over frames the reference was
	// active within the tail.
	sxy, sx, sxx []float64
	sy, syy, n   float64
	cur          int  // the delay applied (frames)
	cand, stab   int  // the best lag less the slack, and for how many frames it has been best
	known        bool // cur was estimated (else 0)
	// best is the best lag's correlation once the sums hold enough frames (else −1).
	best float64
}

const (
	// delayForget: the correlation's memory, about 2 s of active reference.
	delayForget = 0.995
	// delaySlack: frames the reference is delayed less than the estimate, so the direct path
	// and a lag estimated a frame long still reach the canceller's filter causally.
	delaySlack = 2
	// delayNoEcho: with the sums full (delayFull frames of active reference), a best
	// correlation under it at every lag means no echo reaches the microphone (headphones, a
	// client that cancels its own echo): noEcho.
	delayNoEcho = 0.3
	delayFull   = 100
	// delayMinCorr, delayStable: a lag is taken when its correlation is over delayMinCorr and
	// it has been the best for delayStable frames; a taken delay moves only for delayMove
	// frames or more (each move makes the canceller relearn).
	delayMinCorr = 0.5
	delayStable  = 50
	delayMove    = 3
)

func newDelayEst(lags int) *delayEst {
	d := &delayEst{lags: lags, best: -1, hist: make([][]int16, lags+1), env: make([]float64, lags+1),
		sxy: make([]float64, lags+1), sx: make([]float64, lags+1), sxx: make([]float64, lags+1)}
	for i := range d.hist {
		d.hist[i] = make([]int16, FrameSamples)
	}
	for i := range d.env {
		d.env[i] = -6
	}
	return d
}

func logEnv(e float64) float64 { return math.Log10(max(e, 1e-6)) }

// push takes this frame's raw reference and microphone; it writes the delayed reference to dst.
// active: the reference was active within the tail (the envelopes carry information).
func (d *delayEst) push(raw, mic, dst []int16, active bool) {
	d.at = (d.at + 1) % len(d.hist)
	copy(d.hist[d.at], raw)
	d.env[d.at] = logEnv(meanSquare(raw))
	if active {
		y := logEnv(meanSquare(mic))
		d.n = delayForget*d.n + 1
		d.sy = delayForget*d.sy + y
		d.syy = delayForget*d.syy + y*y
		for k := 0; k <= d.lags; k++ {
			x := d.env[(d.at-k+len(d.env))%len(d.env)]
			d.sx[k] = delayForget*d.sx[k] + x
			d.sxx[k] = delayForget*d.sxx[k] + x*x
			d.sxy[k] = delayForget*d.sxy[k] + x*y
		}
		if d.n > delayFull {
			best, bk := -1.0, 0
			vy := d.syy/d.n - (d.sy/d.n)*(d.sy/d.n)
			for k := 0; k <= d.lags; k++ {
				vx := d.sxx[k]/d.n - (d.sx[k]/d.n)*(d.sx[k]/d.n)
				c := d.sxy[k]/d.n - (d.sx[k]/d.n)*(d.sy/d.n)
				if vx <= 0 || vy <= 0 {
					continue
				}
				if r := c / math.Sqrt(vx*vy); r > best {
					best, bk = r, k
				}
			}
			d.best = best
			target := max(bk-delaySlack, 0)
			if best > delayMinCorr {
				if target == d.cand {
					d.stab++
				} else {
					d.cand, d.stab = target, 0
				}
				if d.stab >= delayStable && (!d.known || abs(target-d.cur) >= delayMove) {
					d.cur, d.known = target, true
				}
			}
		}
	}
	copy(dst, d.hist[(d.at-d.cur+len(d.hist))%len(d.hist)])
}

// noEcho says whether the microphone's energy has followed the reference's at no delay the
// tail allows, over the last ~2 s of active reference: no echo reaches it.
func (d *delayEst) noEcho() bool { return d.n > delayFull && d.best < delayNoEcho }

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// nextRef takes one frame of the queued reference and puts it, delayed by the estimated bulk
// delay, in f.ref.
func (f *Filter) nextRef(mic []int16) {
	f.takeFar(f.raw)
	f.rawRing[f.rawAt] = meanSquare(f.raw)
	f.rawAt = (f.rawAt + 1) % len(f.rawRing)
	active := false
	for _, v := range f.rawRing {
		if v > guardFloor {
			active = true
			break
		}
	}
	f.dl.push(f.raw, mic, f.ref, active)
}
