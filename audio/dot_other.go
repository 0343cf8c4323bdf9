//go:build !amd64

package audio

// dot is Σ c[i]·x[i] over len(c); x must hold at least len(c) samples.
func dot(c, x []float32) float32 { return dotGo(c, x) }

// dotVariants are the implementations this CPU can run, for the tests.
func dotVariants() map[string]func(c, x []float32) float32 {
	return map[string]func(c, x []float32) float32{"go": dotGo}
}
