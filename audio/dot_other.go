//go:build !amd64

package audio

// dot is Σ c[i]·x[i] over len(c); x must hold at least len(c) samples.
func dot(c, x []float32) float32 { return dotGo(c, x) }
