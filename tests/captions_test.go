package tests

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/speechcore/fixture"
)

// TestNodeCaptionsParse (issue 20 item 2, "srt/vtt parse with a real parser"): two utterances
// with a gap between them, transcribed by the official openai package as verbose_json (segment
// timestamps), srt and vtt; the srt parsed by the npm package subtitle, the vtt by webvtt-parser.
// Both parse without error, with one cue per segment at the segment's times (to the
// millisecond the formats carry), and the segments lie where the speech is (within 20 ms).
func TestNodeCaptionsParse(t *testing.T) {
	checkLeaks(t)
	s := startServer(t, serverOpts{})
	a, b := fixture.PhonemeIDs("hˈɛloʊ wˈɜɹld."), fixture.PhonemeIDs("ɡʊd mˈɔːɹnɪŋ.")
	const gap = 5
	wave := append(fixture.Waveform(a, 1), make([]float32, gap*fixture.PhonemeSamples)...)
	wave = append(wave, fixture.Waveform(b, 1)...)
	pcm := audio.Float32ToInt16(wave)
	file := filepath.Join(t.TempDir(), "two.wav")
	body := append(audio.WAVHeader(fixture.SampleRate, 1, 16, 2*len(pcm)), audio.Int16ToBytes(pcm)...)
	if err := os.WriteFile(file, body, 0o600); err != nil {
		t.Fatal(err)
	}
	lines := nodeScript(t, "captions.mjs", []string{"VOICED_BASE_URL=" + s.Base + "/v1", "VOICED_API_KEY=" + s.Token}, file)
	type cue struct {
		Start, End float64
		Text       string
	}
	var r struct {
		Segments  []cue `json:"segments"`
		SRT       []cue `json:"srt"`
		VTT       []cue `json:"vtt"`
		VTTErrors []any `json:"vttErrors"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
		t.Fatalf("node output %q: %v", lines, err)
	}
	if len(r.Segments) != 2 || len(r.SRT) != len(r.Segments) || len(r.VTT) != len(r.Segments) || len(r.VTTErrors) != 0 {
		t.Fatalf("segments %+v\nsrt cues %+v\nvtt cues %+v\nvtt errors %v", r.Segments, r.SRT, r.VTT, r.VTTErrors)
	}
	const slot = 0.08 // one phoneme
	speech := [][2]float64{{0, float64(len(a)) * slot}, {float64(len(a)+gap) * slot, float64(len(a)+gap+len(b)) * slot}}
	for i, seg := range r.Segments {
		if math.Abs(seg.Start-speech[i][0]) > 0.021 || math.Abs(seg.End-speech[i][1]) > 0.021 {
			t.Errorf("segment %d at %.3f–%.3f, the speech at %.3f–%.3f", i, seg.Start, seg.End, speech[i][0], speech[i][1])
		}
		for name, c := range map[string]cue{"srt": r.SRT[i], "vtt": r.VTT[i]} {
			if math.Abs(c.Start-seg.Start) > 0.0011 || math.Abs(c.End-seg.End) > 0.0011 || strings.TrimSpace(c.Text) != strings.TrimSpace(seg.Text) {
				t.Errorf("%s cue %d %+v, segment %+v", name, i, c, seg)
			}
		}
	}
	s.stop()
}
