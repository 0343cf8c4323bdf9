package aec_test

import (
	"math/rand/v2"
	"testing"

	"github.com/voiced/voiced/audio/aec"
)

// BenchmarkFilterPerSecond is the CPU one second of microphone audio costs (20 ms pushes), with
// a reference queued: ns/op is per second of audio.
func BenchmarkFilterPerSecond(b *testing.B) {
	for _, c := range []struct {
		name string
		cfg  aec.Config
	}{
		{"webrtc-echo", aec.Config{Echo: true}},
		{"webrtc-echo+ns", aec.Config{Echo: true, SuppressDB: aec.SuppressNearField}},
		{"webrtc-ns", aec.Config{SuppressDB: aec.SuppressNearField}},
		{"speex-echo", aec.Config{Echo: true, Engine: aec.Speex}},
		{"speex-echo+ns", aec.Config{Echo: true, SuppressDB: aec.SuppressNearField, Engine: aec.Speex}},
		{"speex-ns", aec.Config{SuppressDB: aec.SuppressNearField, Engine: aec.Speex}},
	} {
		b.Run(c.name, func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			mic := make([]float32, aec.Rate)
			ref := make([]float32, aec.Rate)
			for i := range mic {
				ref[i] = float32(r.NormFloat64() * 0.1)
				mic[i] = float32(r.NormFloat64() * 0.05)
			}
			f, err := aec.New(c.cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			b.ResetTimer()
			for b.Loop() {
				f.Far(ref)
				for i := 0; i < len(mic); i += 320 {
					f.Process(mic[i : i+320])
				}
			}
		})
	}
}
