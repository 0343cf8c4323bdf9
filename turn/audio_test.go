package turn

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/voiced/voiced/speechcore/runtime"
	"github.com/voiced/voiced/speechcore/squelch"
)

// The real Silero model on the real ONNX Runtime, opened once for the package's tests.
var (
	testEnvErr  error
	sharedModel *squelch.Model
)

func TestMain(m *testing.M) {
	var env *runtime.Env
	if lib := runtime.LibPathFromEnv(); lib != "" && os.Getenv("VOICED_SILERO_MODEL") != "" {
		env, testEnvErr = runtime.Open(runtime.Config{LibPath: lib})
		if testEnvErr == nil {
			sharedModel, testEnvErr = squelch.Load(env, os.Getenv("VOICED_SILERO_MODEL"))
		}
	}
	code := m.Run()
	if sharedModel != nil {
		sharedModel.Close()
	}
	if env != nil {
		env.Close()
	}
	os.Exit(code)
}

// silero is the Silero model as turn's Speech (as cmd/voiced wires it).
func silero(m *squelch.Model) Speech {
	return SpeechFunc(func() (Prober, error) {
		s, err := m.NewStream()
		if err != nil {
			return nil, err
		}
		return s, nil
	})
}

func needModel(t testing.TB) Speech {
	t.Helper()
	if testEnvErr != nil {
		t.Fatalf("open onnx runtime / silero model: %v", testEnvErr)
	}
	if sharedModel == nil {
		t.Skip("VOICED_ORT_LIB and VOICED_SILERO_MODEL unset: run through make, or eval \"$(make -s env)\"")
	}
	return silero(sharedModel)
}

const rate = squelch.SampleRate

func sileroTestfile(t testing.TB, name string) []float32 {
	t.Helper()
	dir := os.Getenv("VOICED_SILERO_TESTFILES")
	if dir == "" {
		t.Skip("VOICED_SILERO_TESTFILES unset: run through make")
	}
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[i*4:]))
	}
	return out
}

// pocketsphinx reads a headerless 16 kHz 16-bit mono .raw from Debian's pocketsphinx-testdata.
func pocketsphinx(t testing.TB, name string) []float32 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/usr/share/pocketsphinx/test/data", name))
	if os.IsNotExist(err) {
		t.Skip("pocketsphinx-testdata not installed (scripts/install-deps.sh --test)")
	}
	if err != nil {
		t.Fatal(err)
	}
	return int16LE(b)
}

// espeak speaks text with espeak-ng, resampled to 16 kHz by sox.
func espeak(t testing.TB, text string) []float32 {
	t.Helper()
	for _, tool := range []string{"espeak-ng", "sox"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (scripts/install-deps.sh --test)", tool)
		}
	}
	wav, err := exec.Command("espeak-ng", "--stdout", text).Output()
	if err != nil {
		t.Fatalf("espeak-ng: %v", err)
	}
	cmd := exec.Command("sox", "-t", "wav", "-", "-t", "raw", "-r", "16000", "-e", "signed", "-b", "16", "-c", "1", "-")
	cmd.Stdin = bytes.NewReader(wav)
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("sox: %v", err)
	}
	return int16LE(raw)
}

func int16LE(b []byte) []float32 {
	out := make([]float32, len(b)/2)
	for i := range out {
		out[i] = float32(int16(binary.LittleEndian.Uint16(b[i*2:]))) / 32768
	}
	return out
}

// quiet is pink room tone at -60 dBFS.
func quiet(seconds float64, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 1))
	x := make([]float32, int(seconds*rate))
	var b0, b1, b2, sum float64
	for i := range x {
		w := r.NormFloat64()
		b0 = 0.99765*b0 + w*0.0990460
		b1 = 0.96300*b1 + w*0.2965164
		b2 = 0.57000*b2 + w*1.0526913
		v := b0 + b1 + b2 + w*0.1848
		x[i] = float32(v)
		sum += v * v
	}
	gain := math.Pow(10, -60.0/20) / math.Sqrt(sum/float64(len(x)))
	for i := range x {
		x[i] = float32(float64(x[i]) * gain)
	}
	return x
}

func whiteNoise(seconds float64, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 3))
	x := make([]float32, int(seconds*rate))
	for i := range x {
		x[i] = float32(r.Float64()*2 - 1)
	}
	return x
}

// trimSpeech cuts a recording to its energetic extent (10 ms frames within 20 dB of the loudest),
// so sequences control their own pauses.
func trimSpeech(x []float32) []float32 {
	const frame = rate / 100
	levels := make([]float64, len(x)/frame)
	var loudest float64
	for i := range levels {
		var sum float64
		for _, v := range x[i*frame : (i+1)*frame] {
			sum += float64(v) * float64(v)
		}
		levels[i] = math.Sqrt(sum / frame)
		loudest = max(loudest, levels[i])
	}
	first, last := -1, 0
	for i, l := range levels {
		if l >= loudest/10 {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	return x[first*frame : (last+1)*frame]
}

func concat(parts ...[]float32) []float32 {
	var out []float32
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func msOf(samples int) int64 { return int64(samples) * 1000 / rate }

// ms is a position in samples in milliseconds, as the wire reports it.
func ms(samples int64) int64 { return samples * 1000 / rate }
