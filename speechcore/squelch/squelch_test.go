package squelch

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/streamer45/silero-vad-go/speech"
)

const push250ms = SampleRate / 4

func TestConfig(t *testing.T) {
	model := os.Getenv("VOICED_SILERO_MODEL")
	garbage := filepath.Join(t.TempDir(), "silero_vad.onnx")
	if err := os.WriteFile(garbage, []byte("not an onnx model"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		cfg     Config
		needs   bool // needs the runtime and model
		wantErr error
		want    Config
	}{
		"defaults": {cfg: Config{ModelPath: model}, needs: true,
			want: Config{OpenThreshold: 0.5, CloseThreshold: 0.35, Hang: 200 * time.Millisecond, Lead: 500 * time.Millisecond, Confirm: 160 * time.Millisecond}},
		"off means none": {cfg: Config{ModelPath: model, Hang: Off, Lead: Off, Confirm: Off}, needs: true,
			want: Config{OpenThreshold: 0.5, CloseThreshold: 0.35}},
		"explicit": {cfg: Config{ModelPath: model, OpenThreshold: 0.7, CloseThreshold: 0.7, Hang: time.Second, Lead: 250 * time.Millisecond, Confirm: 32 * time.Millisecond}, needs: true,
			want: Config{OpenThreshold: 0.7, CloseThreshold: 0.7, Hang: time.Second, Lead: 250 * time.Millisecond, Confirm: 32 * time.Millisecond}},
		"open threshold 1":        {cfg: Config{ModelPath: model, OpenThreshold: 1}, wantErr: ErrConfig},
		"open threshold negative": {cfg: Config{ModelPath: model, OpenThreshold: -0.2}, wantErr: ErrConfig},
		"close above open":        {cfg: Config{ModelPath: model, OpenThreshold: 0.4, CloseThreshold: 0.45}, wantErr: ErrConfig},
		"close negative":          {cfg: Config{ModelPath: model, CloseThreshold: -0.1}, wantErr: ErrConfig},
		"hang negative":           {cfg: Config{ModelPath: model, Hang: -2 * time.Second}, wantErr: ErrConfig},
		"lead negative":           {cfg: Config{ModelPath: model, Lead: -time.Millisecond * 3}, wantErr: ErrConfig},
		"confirm negative":        {cfg: Config{ModelPath: model, Confirm: -time.Second}, wantErr: ErrConfig},
		"no model path":           {cfg: Config{}, wantErr: ErrConfig},
		"model missing":           {cfg: Config{ModelPath: filepath.Join(t.TempDir(), "absent.onnx")}, needs: true, wantErr: ErrModel},
		"not a model":             {cfg: Config{ModelPath: garbage}, needs: true, wantErr: ErrModel},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if tc.needs {
				needModel(t)
				tc.cfg.Env = testEnv
			}
			s, err := New(tc.cfg)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("New: got %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			defer s.Close()
			got := s.Config()
			got.ModelPath, got.Env, got.Model = "", nil, nil
			if got != tc.want {
				t.Fatalf("effective config %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestLoadNeedsRuntime(t *testing.T) {
	if testEnv != nil {
		t.Skip("the runtime is open in this process; this checks the refusal when it is not")
	}
	if _, err := Load(nil, "silero_vad.onnx"); !errors.Is(err, ErrNoRuntime) {
		t.Fatalf("Load without a runtime: %v, want ErrNoRuntime", err)
	}
}

// Pushes of any size must give the probabilities one long push gives: the remainder carries.
func TestStreamCarriesRemainder(t *testing.T) {
	m := needModel(t)
	pcm := sileroTestfile(t, "samples.pcm")
	probs := func(sizes []int) []float32 {
		st, err := m.NewStream()
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		var out []float32
		emit := func(p float32) { out = append(out, p) }
		for at, i := 0, 0; at < len(pcm); i++ {
			n := min(sizes[i%len(sizes)], len(pcm)-at)
			if err := st.Feed(pcm[at:at+n], emit); err != nil {
				t.Fatal(err)
			}
			at += n
		}
		if want := len(pcm) / WindowSamples; len(out) != want || int(st.Windows()) != want || st.Pending() != len(pcm)%WindowSamples {
			t.Fatalf("sizes %v: %d probabilities, %d windows, %d pending; want %d windows, %d pending",
				sizes, len(out), st.Windows(), st.Pending(), want, len(pcm)%WindowSamples)
		}
		return out
	}
	whole := probs([]int{len(pcm)})
	for name, sizes := range map[string][]int{
		"one sample":  {1},
		"odd sizes":   {100, 511, 513, 4000, 7919},
		"250 ms":      {push250ms},
		"one window":  {WindowSamples},
		"window plus": {WindowSamples + 1},
	} {
		t.Run(name, func(t *testing.T) {
			got := probs(sizes)
			for i := range whole {
				if got[i] != whole[i] {
					t.Fatalf("window %d: %v, one long push gives %v", i, got[i], whole[i])
				}
			}
		})
	}
}

// The model runner here and silero-vad-go's Detector (SPEC's chosen client, which feeds its first
// window without context and sr as rank 1) must find the same speech on the same real audio.
func TestAgreesWithSileroVadGo(t *testing.T) {
	m := needModel(t)
	for _, name := range []string{"samples.pcm", "samples2.pcm"} {
		t.Run(name, func(t *testing.T) {
			pcm := sileroTestfile(t, name)
			d, err := speech.NewDetector(speech.DetectorConfig{
				ModelPath: os.Getenv("VOICED_SILERO_MODEL"), SampleRate: SampleRate, Threshold: 0.5, LogLevel: speech.LogLevelError,
			})
			if err != nil {
				t.Fatalf("silero-vad-go: %v", err)
			}
			defer d.Destroy()
			// Its loop runs floor((len-1)/512) windows: one extra sample lets it see the last one.
			theirs, err := d.Detect(append(append([]float32(nil), pcm...), 0))
			if err != nil {
				t.Fatalf("silero-vad-go Detect: %v", err)
			}
			st, err := m.NewStream()
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			var ours []speech.Segment
			triggered, window := false, 0
			if err := st.Feed(pcm, func(p float32) {
				window++
				switch {
				case p >= 0.5 && !triggered:
					triggered = true
					ours = append(ours, speech.Segment{SpeechStartAt: float64((window-1)*WindowSamples) / SampleRate})
				case p < 0.35 && triggered:
					triggered = false
					ours[len(ours)-1].SpeechEndAt = float64(window*WindowSamples) / SampleRate
				}
			}); err != nil {
				t.Fatal(err)
			}
			t.Logf("silero-vad-go %v", theirs)
			t.Logf("this stream   %v", ours)
			if len(ours) != len(theirs) {
				t.Fatalf("%d segments here, %d from silero-vad-go", len(ours), len(theirs))
			}
			const tolerance = 2 * float64(WindowSamples) / SampleRate
			for i := range ours {
				if math.Abs(ours[i].SpeechStartAt-theirs[i].SpeechStartAt) > tolerance || math.Abs(ours[i].SpeechEndAt-theirs[i].SpeechEndAt) > tolerance {
					t.Errorf("segment %d: here %+v, silero-vad-go %+v", i, ours[i], theirs[i])
				}
			}
		})
	}
}

// The specialised graph (fold.go) must give exactly the probabilities of the export as shipped.
func TestSpecialisedModelAgrees(t *testing.T) {
	needModel(t)
	shipped, err := load(testEnv, os.Getenv("VOICED_SILERO_MODEL"), false)
	if err != nil {
		t.Fatal(err)
	}
	defer shipped.Close()
	if !shipped.hasSR || sharedModel.hasSR {
		t.Fatalf("sr declared: shipped %v, specialised %v; want true, false", shipped.hasSR, sharedModel.hasSR)
	}
	for _, name := range []string{"samples.pcm", "samples2.pcm"} {
		pcm := sileroTestfile(t, name)
		probs := func(m *Model) []float32 {
			st, err := m.NewStream()
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			var out []float32
			if err := st.Feed(pcm, func(p float32) { out = append(out, p) }); err != nil {
				t.Fatal(err)
			}
			return out
		}
		want, got := probs(shipped), probs(sharedModel)
		for i := range want {
			if d := math.Abs(float64(got[i] - want[i])); d > 1e-6 {
				t.Fatalf("%s window %d: specialised %v, shipped %v", name, i, got[i], want[i])
			}
		}
	}
}
