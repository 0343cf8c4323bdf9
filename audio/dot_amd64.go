package audio

// The polyphase resampler spends nearly all its time in its dot products. dot4 computes four
// of them at once in SSE (dot_amd64.s, every amd64), each bit for bit as dotGo computes it:
// the same products and the same order of additions, only four independent sums interleaved.

//go:noescape
func dot4SSE(c0, c1, c2, c3, x0, x1, x2, x3 *float32, n int, out *[4]float32)

// dot4 sets out[k] = dotGo(c[k], x[k]) for four pairs whose c have one length n; each x must
// hold at least n samples.
func dot4(c, x *[4][]float32, out *[4]float32) {
	n := len(c[0])
	for k := range c {
		if len(c[k]) != n || len(x[k]) < n {
			panic("audio: dot4 lengths")
		}
	}
	if n == 0 {
		*out = [4]float32{}
		return
	}
	dot4SSE(&c[0][0], &c[1][0], &c[2][0], &c[3][0], &x[0][0], &x[1][0], &x[2][0], &x[3][0], n, out)
}
