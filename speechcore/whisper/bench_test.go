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
// dec-ort-ns/step is the time inside the decoder's runs alone (the encoder left out) and loop-% is
// loop-ns/token against it (issue 26's bound: 10 %). values/step and copied-B/step are
// Result.Values and Result.CopiedBytes per decoder step: ONNX Runtime values created and tensor
// bytes copied between its buffers and Go memory.
func BenchmarkTranscribeFixture(b *testing.B) {
	e := loadEngine(b, Options{})
	ids := fixture.PhonemeIDs(roundTripPhonemes)
	pcm := audio.Resample(speakFixture(b, ids), fixture.SampleRate, audio.WhisperSampleRate)
	var outside, inside, features, steps, encode, values, copied float64
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
		encode += float64(res.Encode)
		values += float64(res.Values)
		copied += float64(res.CopiedBytes)
	}
	b.ReportMetric(outside/steps, "overhead-ns/token")
	b.ReportMetric((inside-encode)/steps, "dec-ort-ns/step")
	b.ReportMetric(100*(outside-features)/(inside-encode), "loop-%")
	b.ReportMetric(values/steps, "values/step")
	b.ReportMetric(copied/steps, "copied-B/step")
	b.ReportMetric((outside-features)/steps, "loop-ns/token")
	b.ReportMetric(features/float64(b.N), "mel-ns/op")
	b.ReportMetric(inside/steps, "ort-ns/token")
	b.ReportMetric(steps/float64(b.N), "tokens/op")
}

// BenchmarkLanguageDetection measures what "auto" costs a final: the detection pass (one decoder
// call over <|startoftranscript|>, Result.Detect) against a decode told the language, and per
// token with timestamps and logprobs on (the timestamp rules and the log-softmax over the row).
func BenchmarkLanguageDetection(b *testing.B) {
	e := loadEngine(b, Options{})
	_, pcm := speak16k(b, spanishPhonemes)
	for _, c := range []struct {
		name string
		req  Request
	}{
		{"told", Request{Language: "es"}},
		{"auto", Request{Language: "auto"}},
		{"timestamps", Request{Language: "es", Timestamps: true}},
		{"logprobs", Request{Language: "es", Logprobs: true}},
		{"timestamps+logprobs", Request{Language: "es", Timestamps: true, Logprobs: true}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var detect, decode, steps, outside float64
			for b.Loop() {
				res, err := e.TranscribeAs(context.Background(), pcm, c.req)
				if err != nil {
					b.Fatal(err)
				}
				detect += float64(res.Detect)
				decode += float64(res.Decode)
				steps += float64(res.Steps)
				outside += float64(res.Decode - res.InModel - res.Features)
			}
			b.ReportMetric(detect/float64(b.N), "detect-ns/op")
			b.ReportMetric(decode/float64(b.N), "decode-ns/op")
			b.ReportMetric(outside/steps, "loop-ns/step")
			b.ReportMetric(steps/float64(b.N), "steps/op")
		})
	}
}

// BenchmarkPick is one step's logits processing on a whisper-small-sized row (V = 51865, the
// multilingual vocabulary's specials and suppress lists' sizes): the masks, the argmax and, for
// the logprobs case, the log-softmax. The fixture's V = 1689 hides this cost.
func BenchmarkPick(b *testing.B) {
	const v, eot, tsBegin = 51865, 50257, 50364
	m := &model{vocab: v, dec: decoding{eot: eot, timestampBegin: tsBegin, noTimestamps: tsBegin - 1,
		beginSuppress: []int{220, eot}}}
	for id := 0; id < 90; id++ {
		m.dec.suppress = append(m.dec.suppress, 1+id*97)
	}
	m.dec.suppress = append(m.dec.suppress, eot+1, eot+2, eot+3)
	if err := m.makeMasks(); err != nil {
		b.Fatal(err)
	}
	row := make([]float32, v)
	for i := range row {
		row[i] = float32(math.Sin(float64(i) * 0.37))
	}
	sampled := []int{5, 6, 7}
	for _, c := range []struct {
		name  string
		rules pickRules
	}{{"plain", pickRules{}}, {"logprobs", pickRules{logprob: true}}, {"timestamps", pickRules{timestamps: true}}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				m.pick(row, sampled, c.rules)
			}
		})
	}
}
