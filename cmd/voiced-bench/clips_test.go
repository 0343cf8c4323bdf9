package main

import (
	"math"
	"os"
	"testing"
)

// tone makes ms of a 300 Hz sine at amplitude a (0 = silence) at 16 kHz.
func tone(ms int, a float64) []float32 {
	out := make([]float32, rate16k*ms/1000)
	for i := range out {
		out[i] = float32(a * math.Sin(2*math.Pi*300*float64(i)/rate16k))
	}
	return out
}

func cat(parts ...[]float32) []float32 {
	var out []float32
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestSplitUtterances(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		pcm      []float32
		wantEnds []int // end of speech, in samples of each utterance
		wantLens []int
	}{
		"one": {cat(tone(1000, 0), tone(500, 0.5), tone(1000, 0)), []int{rate16k * 800 / 1000}, []int{rate16k * 800 / 1000}},
		"two, far apart": {cat(tone(200, 0), tone(400, 0.5), tone(1000, 0), tone(300, 0.2)),
			[]int{rate16k * 600 / 1000, rate16k * 600 / 1000}, []int{rate16k * 600 / 1000, rate16k * 600 / 1000}},
		// a 300 ms pause is inside one utterance; the lead-in is cut short at the file's start
		"pause joined": {cat(tone(100, 0), tone(400, 0.5), tone(300, 0), tone(400, 0.5), tone(500, 0)),
			[]int{rate16k * 1200 / 1000}, []int{rate16k * 1200 / 1000}},
		"click dropped": {cat(tone(1000, 0), tone(100, 0.5), tone(1000, 0)), nil, nil},
		"silence":       {tone(1000, 0), nil, nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			us := splitUtterances([]recording{{name: name, pcm: tc.pcm}})
			if len(us) != len(tc.wantEnds) {
				t.Fatalf("got %d utterances, want %d", len(us), len(tc.wantEnds))
			}
			for i, u := range us {
				if u.end != tc.wantEnds[i] || len(u.pcm) != tc.wantLens[i] {
					t.Errorf("utterance %d: end %d len %d, want end %d len %d", i, u.end, len(u.pcm), tc.wantEnds[i], tc.wantLens[i])
				}
			}
		})
	}
}

func TestRealSpeechSplits(t *testing.T) {
	t.Parallel()
	dir := os.Getenv("VOICED_SILERO_TESTFILES")
	if dir == "" {
		t.Skip("VOICED_SILERO_TESTFILES is not set (eval \"$(make -s env)\"): no real speech to split")
	}
	recs, err := loadRecordings(nil, dir)
	if err != nil {
		t.Fatal(err)
	}
	us := splitUtterances(recs)
	if len(us) < 3 {
		t.Fatalf("%d utterances in %d recordings", len(us), len(recs))
	}
	for _, u := range us {
		t.Logf("%s: %.2f s, speech ends at %.2f s", u.name, float64(len(u.pcm))/rate16k, float64(u.end)/rate16k)
	}
}
