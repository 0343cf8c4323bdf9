package audio

import (
	"errors"
	"testing"
)

// Each encoding decodes what it encodes: PCM16 exactly, G.711 within its quantisation step.
func TestEncodingRoundTrip(t *testing.T) {
	t.Parallel()
	pcm := []int16{0, 1, -1, 100, -100, 8000, -8000, 32767, -32768}
	for _, e := range []Encoding{PCM16, Mulaw, Alaw} {
		b := e.Encode(pcm)
		if len(b) != len(pcm)*e.BytesPerSample() {
			t.Fatalf("%v: %d bytes for %d samples", e, len(b), len(pcm))
		}
		f, err := e.Decode(b)
		if err != nil {
			t.Fatalf("%v: %v", e, err)
		}
		for i, v := range Float32ToInt16(f) {
			d := int(v) - int(pcm[i])
			tol := 0
			if e != PCM16 {
				tol = max(abs(int(pcm[i]))/16, 8) // G.711's step grows with the level
			}
			if abs(d) > tol {
				t.Errorf("%v: sample %d: %d → %d", e, i, pcm[i], v)
			}
		}
	}
	if _, err := PCM16.Decode([]byte{1, 2, 3}); !errors.Is(err, ErrOddLength) {
		t.Errorf("odd PCM16: %v, want ErrOddLength", err)
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
