package main

import (
	"math"
	"testing"
)

func TestLayTones(t *testing.T) {
	t.Parallel()
	speech := func(lead, n int, amp float32) utterance {
		pcm := make([]float32, lead+n)
		for i := lead; i < len(pcm); i++ {
			pcm[i] = amp * float32(math.Sin(float64(i)/7))
		}
		return utterance{name: "u", pcm: pcm, start: lead, end: len(pcm)}
	}
	tone := make([]float32, 1000)
	for i := range tone {
		tone[i] = 0.5
	}
	utts := []utterance{speech(100, 3000, 0.05), speech(50, 500, 0.8), speech(0, 1000, 1)}
	out := layTones(utts, [][]float32{tone}, []string{"q"})
	if len(out) != 2 {
		t.Fatalf("%d utterances, want 2 (the one shorter than the tones left out)", len(out))
	}
	u := out[0]
	if u.start != 100 || u.end != 1100 || len(u.pcm) != 1100 || u.name != "u+q" {
		t.Fatalf("start %d end %d len %d name %q, want 100 1100 1100 u+q", u.start, u.end, len(u.pcm), u.name)
	}
	var peak float64
	for i := u.start; i < u.end; i++ {
		speechPart := float64(u.pcm[i]) - 0.15 // the tones at 0.3 of 0.5
		peak = max(peak, math.Abs(speechPart))
	}
	if math.Abs(peak-0.3) > 0.01 {
		t.Fatalf("speech peak %.3f under the tones, want 0.3", peak)
	}
	if u.pcm[0] != 0 || out[1].start != 0 || len(out[1].pcm) != 1000 {
		t.Fatalf("lead-in or the third utterance wrong: %v %d %d", u.pcm[0], out[1].start, len(out[1].pcm))
	}
}
