package audio

import "math"

// Stretch changes x's tempo by factor without changing its pitch (WSOLA: waveform-similarity
// overlap-add): factor 2 plays twice as fast (half as long), 0.5 half as fast. Frames of 30 ms
// are taken every 15 ms × factor from the input, each shifted by up to ±10 ms to the place most
// like the natural continuation of the frame before, and overlap-added with a Hann window every
// 15 ms. The output has round(len(x)/factor) samples. factor must be > 0; 1 returns a copy.
func Stretch(x []float32, rate int, factor float64) []float32 {
	outLen := int(math.Round(float64(len(x)) / factor))
	if factor == 1 || len(x) == 0 || outLen == 0 {
		return append([]float32(nil), x...)
	}
	n := rate * 30 / 1000
	if n < 4 {
		return append([]float32(nil), x...)
	}
	hs, tol := n/2, rate*10/1000
	// The input, padded at the end so every frame and search window lies inside it.
	src := make([]float32, len(x)+2*n+2*tol)
	copy(src, x)
	win := make([]float32, n)
	for i := range win {
		win[i] = float32(0.5 - 0.5*math.Cos(2*math.Pi*float64(i)/float64(n)))
	}
	out := make([]float32, outLen+n)
	norm := make([]float32, outLen+n)
	prev := 0
	for k := 0; k*hs < outLen; k++ {
		pos := int(math.Round(float64(k*hs) * factor)) // the input time of output sample k·hs
		if k > 0 {
			target := prev + hs // where the previous frame's signal naturally goes on
			best, bestPos := math.Inf(-1), pos
			for p := max(0, pos-tol); p <= pos+tol && p+n <= len(src); p++ {
				var c float32
				for i := 0; i < n; i += 2 {
					c += src[p+i] * src[target+i]
				}
				if float64(c) > best {
					best, bestPos = float64(c), p
				}
			}
			pos = bestPos
		}
		if pos+n > len(src) {
			break
		}
		o := k * hs
		for i, w := range win {
			out[o+i] += src[pos+i] * w
			norm[o+i] += w
		}
		prev = pos
	}
	for i := range out {
		if norm[i] > 1e-3 {
			out[i] /= norm[i]
		}
	}
	return out[:outLen]
}
