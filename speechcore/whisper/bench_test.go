package whisper

import (
	"context"
	"math"
	"testing"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/speechcore/fixture"
)

// BenchmarkMel30s is the front end for one full 30 s window (audio.Mel, buffers reused as the
// engine reuses them).
func BenchmarkMel30s(b *testing.B) {
	pcm := make([]float32, audio.WhisperSamples)
	for i := range pcm {
		pcm[i] = float32(0.3 * math.Sin(2*math.Pi*440*float64(i)/audio.WhisperSampleRate))
	}
	m := audio.NewMel(80)
	var buf []float32
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		buf = m.Compute(buf, pcm)
	}
}

// BenchmarkTranscribeFixture decodes the round-trip sentence on the fixture mount and reports the
// decoder loop's own cost per token: (wall - time inside ONNX Runtime) / decoder steps, which
// counts the mel front end too; loop-ns/token leaves the mel out (feeds, argmax, tensors, detokenising).
func BenchmarkTranscribeFixture(b *testing.B) {
	e := loadEngine(b, Options{})
	ids := fixture.PhonemeIDs(roundTripPhonemes)
	pcm := audio.Resample(speakFixture(b, ids), fixture.SampleRate, audio.WhisperSampleRate)
	var outside, inside, features, steps float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := e.Transcribe(context.Background(), pcm)
		if err != nil {
			b.Fatal(err)
		}
		outside += float64(res.Decode - res.InModel)
		inside += float64(res.InModel)
		features += float64(res.Features)
		steps += float64(res.Steps)
	}
	b.ReportMetric(outside/steps, "overhead-ns/token")
	b.ReportMetric((outside-features)/steps, "loop-ns/token")
	b.ReportMetric(features/float64(b.N), "mel-ns/op")
	b.ReportMetric(inside/steps, "ort-ns/token")
	b.ReportMetric(steps/float64(b.N), "tokens/op")
}
