package audio

// dotSSE is dot in SSE (dot_amd64.s): the polyphase resampler spends nearly all its time here.
//
//go:noescape
func dotSSE(c, x []float32) float32

// dot is Σ c[i]·x[i] over len(c); x must hold at least len(c) samples.
func dot(c, x []float32) float32 {
	x = x[:len(c)]
	return dotSSE(c, x)
}
