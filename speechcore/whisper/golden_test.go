package whisper

import (
	"context"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/speechcore/fixture"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/decode_golden.json from this build's decodes")

// goldenCase is one decode whose generated ids and log-probabilities are pinned: the file was
// written by the loop that let onnxruntime_go copy every output into Go memory (before I/O
// binding), so any change to what the decoder is fed shows as a different id or logprob bit.
type goldenCase struct {
	Name     string       `json:"name"`
	Tokens   []int        `json:"tokens"`
	Language string       `json:"language"`
	Logprobs []float64    `json:"logprobs,omitempty"`
	SegLogp  []float64    `json:"segment_avg_logprobs,omitempty"`
	Segments [][2]float64 `json:"segments,omitempty"` // start, end (timestamp ids)
	Steps    int          `json:"steps"`
}

// goldenDecodes runs the pinned cases: the round-trip sentence (English told), Spanish detected,
// Spanish with timestamps and logprobs, English with logprobs, Spanish translated, and the mel
// path (TranscribeMelAs) with timestamps.
func goldenDecodes(t *testing.T, e *Engine) []goldenCase {
	t.Helper()
	en := audio.Resample(speakFixture(t, fixture.PhonemeIDs(roundTripPhonemes)), fixture.SampleRate, audio.WhisperSampleRate)
	_, es := speak16k(t, spanishPhonemes)
	mel := audio.NewMel(e.NumMels()).Compute(nil, es)
	cases := []struct {
		name string
		pcm  []float32
		mel  bool
		req  Request
	}{
		{"en told", en, false, Request{}},
		{"es auto", es, false, Request{Language: LanguageAuto}},
		{"es timestamps logprobs", es, false, Request{Language: "es", Timestamps: true, Logprobs: true}},
		{"en logprobs", en, false, Request{Language: "en", Logprobs: true}},
		{"es translate", es, false, Request{Language: LanguageAuto, Translate: true}},
		{"es mel timestamps", nil, true, Request{Language: "es", Timestamps: true}},
	}
	var out []goldenCase
	for _, c := range cases {
		var res Result
		var err error
		if c.mel {
			res, err = e.TranscribeMelAs(context.Background(), mel, c.req)
		} else {
			res, err = e.TranscribeAs(context.Background(), c.pcm, c.req)
		}
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		g := goldenCase{Name: c.name, Tokens: res.Tokens, Language: res.Language, Steps: res.Steps}
		for _, lp := range res.Logprobs {
			g.Logprobs = append(g.Logprobs, lp.Logprob)
		}
		for _, s := range res.Segments {
			g.SegLogp = append(g.SegLogp, s.AvgLogprob)
			g.Segments = append(g.Segments, [2]float64{s.Start, s.End})
		}
		out = append(out, g)
	}
	return out
}

// TestDecodeGolden: the decoder loop gives the same ids and the same log-probabilities, bit for
// bit, as the loop the golden file was recorded with, on every pinned case.
func TestDecodeGolden(t *testing.T) {
	e := loadEngine(t, Options{})
	got := goldenDecodes(t, e)
	path := filepath.Join("testdata", "decode_golden.json")
	if *updateGolden {
		data := []byte("[\n")
		for i, g := range got {
			line, _ := json.Marshal(g)
			data = append(data, line...)
			if i < len(got)-1 {
				data = append(data, ',')
			}
			data = append(data, '\n')
		}
		if err := os.WriteFile(path, append(data, "]\n"...), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want []goldenCase
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d cases, golden has %d", len(got), len(want))
	}
	bits := func(f []float64) []uint64 {
		var b []uint64
		for _, x := range f {
			b = append(b, math.Float64bits(x))
		}
		return b
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Name != w.Name || !slices.Equal(g.Tokens, w.Tokens) || g.Language != w.Language || g.Steps != w.Steps {
			t.Errorf("%s: ids %v in %q (%d steps), golden %v in %q (%d steps)", w.Name, g.Tokens, g.Language, g.Steps, w.Tokens, w.Language, w.Steps)
		}
		if !slices.Equal(bits(g.Logprobs), bits(w.Logprobs)) || !slices.Equal(bits(g.SegLogp), bits(w.SegLogp)) || !slices.Equal(g.Segments, w.Segments) {
			t.Errorf("%s: logprobs %v / %v, golden %v / %v", w.Name, g.Logprobs, g.SegLogp, w.Logprobs, w.SegLogp)
		}
	}
}

// TestDecodeLoopCopiesNothing (issue 26 item 4): the decoder's outputs stay ONNX Runtime's own
// values: no byte of the KV cache or logits is copied into Go memory, and the values created are
// step 0's two input tensors and its 1+4L outputs, then per step the logits and the 2L
// self-attention presents only (the cache branch's empty cross presents are not asked for).
func TestDecodeLoopCopiesNothing(t *testing.T) {
	e := loadEngine(t, Options{})
	pcm := audio.Resample(speakFixture(t, fixture.PhonemeIDs(roundTripPhonemes)), fixture.SampleRate, audio.WhisperSampleRate)
	res, err := e.Transcribe(context.Background(), pcm)
	if err != nil {
		t.Fatal(err)
	}
	L := e.model.layers
	want := 2 + (1 + 4*L) + (res.Steps-1)*(1+2*L)
	if res.CopiedBytes != 0 || res.Values != want || res.Steps < 10 {
		t.Fatalf("%d steps: %d values created, %d bytes copied; want %d values, 0 bytes", res.Steps, res.Values, res.CopiedBytes, want)
	}
}
