//go:build !amd64

package audio

// dot4 sets out[k] = dotGo(c[k], x[k]) for four pairs (assembly on amd64, dot_amd64.s).
func dot4(c, x *[4][]float32, out *[4]float32) {
	for k := range c {
		out[k] = dotGo(c[k], x[k])
	}
}
