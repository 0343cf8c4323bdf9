package whisper

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/speechcore/assets"
	"github.com/voiced/voiced/speechcore/fixture"
)

// A sentence of Kokoro phonemes (docs/models.md §2.4's known-good sequence, first clauses).
const roundTripPhonemes = "hˌaʊ kʊd aɪ nˈoʊ? ɪts ɐn ʌnˈænsɚɹəbəl kwˈɛstʃən."

// speakFixture runs the fixture Kokoro graph (the mount's model.onnx) on ids and returns its
// 24 kHz waveform: the model is stubbed, never the function that runs it.
func speakFixture(t testing.TB, ids []int) []float32 {
	t.Helper()
	s, err := testEnv.NewSession(filepath.Join(testMount, filepath.FromSlash(assets.KokoroDir+"/model.onnx")), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	padded := make([]int64, 0, len(ids)+2)
	padded = append(padded, 0)
	for _, id := range ids {
		padded = append(padded, int64(id))
	}
	padded = append(padded, 0)
	inputs := make([]ort.Value, len(s.Inputs))
	for i, in := range s.Inputs {
		var v ort.Value
		switch in.Name {
		case "input_ids", "tokens":
			v, err = ort.NewTensor(ort.NewShape(1, int64(len(padded))), padded)
		case "style":
			v, err = ort.NewTensor(ort.NewShape(1, 256), styleRow(t, len(ids)))
		case "speed":
			v, err = ort.NewTensor(ort.NewShape(1), []float32{1})
		default:
			t.Fatalf("fixture kokoro input %q", in.Name)
		}
		if err != nil {
			t.Fatal(err)
		}
		defer v.Destroy()
		inputs[i] = v
	}
	outputs := make([]ort.Value, len(s.Outputs))
	if err := s.Run(inputs, outputs); err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, o := range outputs {
			o.Destroy()
		}
	}()
	wave := outputs[0].(*ort.Tensor[float32]).GetData()
	return append([]float32(nil), wave...)
}

// styleRow reads the fixture voice af_heart's row for n phoneme ids from the mount.
func styleRow(t testing.TB, n int) []float32 {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testMount, filepath.FromSlash(assets.VoicesDir), "af_heart.bin"))
	if err != nil {
		t.Fatal(err)
	}
	row := fixture.StyleRow(n)
	out := make([]float32, 256)
	for c := range out {
		out[c] = math.Float32frombits(binary.LittleEndian.Uint32(data[(row*256+c)*4:]))
	}
	return out
}

func TestRoundTripThroughFixtureCodec(t *testing.T) {
	e := loadEngine(t, Options{})
	cases := []struct {
		name     string
		phonemes string
	}{
		{"sentence", roundTripPhonemes},
		{"one phoneme", "ə"},
		{"long", roundTripPhonemes + " lˈaɪk ˈæskɪŋ ɐn ʌnbˈɔːɹn tʃˈaɪld ɪf ðeɪl lˈiːd ɐ ɡˈʊd lˈaɪf."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ids := fixture.PhonemeIDs(c.phonemes)
			want := fixture.Phonemes(ids)
			pcm := audio.Resample(speakFixture(t, ids), fixture.SampleRate, audio.WhisperSampleRate)
			res, err := e.Transcribe(context.Background(), pcm)
			if err != nil {
				t.Fatal(err)
			}
			if res.Text != want {
				t.Fatalf("round trip:\n got %q\nwant %q\n(tokens %v)", res.Text, want, res.Tokens)
			}
			if res.Steps != len(ids)+1 {
				t.Errorf("decoder steps = %d, want %d (one per phoneme and the end of text)", res.Steps, len(ids)+1)
			}
		})
	}
}

func TestTranscribeRefusals(t *testing.T) {
	e := loadEngine(t, Options{SkipWarmup: true})
	if _, err := e.Transcribe(context.Background(), make([]float32, audio.WhisperSamples+1)); !errors.Is(err, ErrAudioTooLong) {
		t.Fatalf("31 s: %v, want ErrAudioTooLong", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Transcribe(ctx, make([]float32, 100)); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	e.Close()
	if _, err := e.Transcribe(context.Background(), make([]float32, 100)); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v, want ErrClosed", err)
	}
	e.Close() // twice is fine
}

func TestStatsAfterLoad(t *testing.T) {
	e := loadEngine(t, Options{ModelID: "whisper-fixture"})
	st := e.Stats()
	if st.ModelID != "whisper-fixture" || st.LoadMs <= 0 || st.WarmupMs <= 0 || st.QueueDepth != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestCancelMidDecode: a context that ends during a decode stops it (between steps or inside a
// Run) and the engine serves the next request.
func TestCancelMidDecode(t *testing.T) {
	e := loadEngine(t, Options{SkipWarmup: true})
	ids := fixture.PhonemeIDs(roundTripPhonemes)
	pcm := audio.Resample(speakFixture(t, ids), fixture.SampleRate, audio.WhisperSampleRate)
	for _, after := range []time.Duration{0, time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond} {
		ctx, cancel := context.WithTimeout(context.Background(), after)
		_, err := e.Transcribe(ctx, pcm)
		cancel()
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("cancelled after %v: %v", after, err)
		}
	}
	res, err := e.Transcribe(context.Background(), pcm)
	if err != nil || res.Text != fixture.Phonemes(ids) {
		t.Fatalf("after cancellations: %q %v", res.Text, err)
	}
}

// TestTranscribeMelFromStream: the features of an audio.MelStream fed in pieces decode to the same
// tokens as Transcribe of the same audio, at each partial; wrong-sized features are refused by name.
func TestTranscribeMelFromStream(t *testing.T) {
	e := loadEngine(t, Options{})
	ids := fixture.PhonemeIDs(roundTripPhonemes)
	pcm := audio.Resample(speakFixture(t, ids), fixture.SampleRate, audio.WhisperSampleRate)
	s := audio.NewMelStream(e.NumMels())
	var mel []float32
	step := len(pcm)/3 + 1
	for off := 0; off < len(pcm); off += step {
		end := min(off+step, len(pcm))
		s.Append(pcm[off:end])
		mel = s.Compute(mel)
		got, err := e.TranscribeMel(context.Background(), mel)
		if err != nil {
			t.Fatal(err)
		}
		want, err := e.Transcribe(context.Background(), pcm[:end])
		if err != nil {
			t.Fatal(err)
		}
		if got.Text != want.Text || !slices.Equal(got.Tokens, want.Tokens) {
			t.Fatalf("after %d samples: TranscribeMel %q %v, Transcribe %q %v", end, got.Text, got.Tokens, want.Text, want.Tokens)
		}
		if end == len(pcm) && got.Text != fixture.Phonemes(ids) {
			t.Fatalf("whole utterance: %q, want %q", got.Text, fixture.Phonemes(ids))
		}
	}
	if _, err := e.TranscribeMel(context.Background(), mel[:len(mel)-1]); !errors.Is(err, ErrMelShape) {
		t.Fatalf("short features: %v, want ErrMelShape", err)
	}
}
