package audio

import "golang.org/x/sys/cpu"

// The polyphase resampler spends nearly all its time in dot: in assembly here (dot_amd64.s),
// AVX2 with FMA where the CPU has them, SSE (every amd64) otherwise. Both sum in another order
// than dotGo, and FMA rounds once per tap: the same to within float32 rounding (TestDotMatchesGo,
// TestResampleSpeechMatchesReference).
var useAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

//go:noescape
func dotSSE(c, x []float32) float32

//go:noescape
func dotAVX2(c, x []float32) float32

// dot is Σ c[i]·x[i] over len(c); x must hold at least len(c) samples.
func dot(c, x []float32) float32 {
	x = x[:len(c)]
	if useAVX2 {
		return dotAVX2(c, x)
	}
	return dotSSE(c, x)
}

// dotVariants are the implementations this CPU can run, for the tests.
func dotVariants() map[string]func(c, x []float32) float32 {
	v := map[string]func(c, x []float32) float32{"go": dotGo, "sse": dotSSE}
	if useAVX2 {
		v["avx2"] = dotAVX2
	}
	return v
}
