package whisper

import "math"

// logMel is a stand-in until audio.LogMel lands (docs/models.md §1.1, direct DFT).
func logMel(pcm []float32, filters [][]float32) []float32 {
	const n, hop, frames, nfft = 480000, 160, 3000, 400
	x := make([]float64, n+nfft)
	for i := 0; i < n && i < len(pcm); i++ {
		x[200+i] = float64(pcm[i])
	}
	for i := 1; i <= 200; i++ {
		x[200-i] = x[200+i]
		x[200+n-1+i] = x[200+n-1-i]
	}
	win := make([]float64, nfft)
	for i := range win {
		win[i] = 0.5 - 0.5*math.Cos(2*math.Pi*float64(i)/nfft)
	}
	cos := make([]float64, nfft)
	sin := make([]float64, nfft)
	for i := range cos {
		cos[i] = math.Cos(2 * math.Pi * float64(i) / nfft)
		sin[i] = math.Sin(2 * math.Pi * float64(i) / nfft)
	}
	nm := len(filters)
	out := make([]float32, nm*frames)
	pow := make([]float64, 201)
	fr := make([]float64, nfft)
	maxv := -math.MaxFloat64
	for t := 0; t < frames; t++ {
		silent := true
		for i := 0; i < nfft; i++ {
			fr[i] = x[t*hop+i] * win[i]
			if fr[i] != 0 {
				silent = false
			}
		}
		for k := 0; k <= 200; k++ {
			pow[k] = 0
			if silent {
				continue
			}
			var re, im float64
			for i := 0; i < nfft; i++ {
				j := (k * i) % nfft
				re += fr[i] * cos[j]
				im -= fr[i] * sin[j]
			}
			pow[k] = re*re + im*im
		}
		for m := 0; m < nm; m++ {
			var s float64
			for k, w := range filters[m] {
				s += float64(w) * pow[k]
			}
			v := math.Log10(math.Max(s, 1e-10))
			out[m*frames+t] = float32(v)
			maxv = math.Max(maxv, v)
		}
	}
	for i, v := range out {
		out[i] = float32((math.Max(float64(v), maxv-8) + 4) / 4)
	}
	return out
}
