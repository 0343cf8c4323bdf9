package squelch

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/voiced/voiced/speechcore/runtime"
)

// The real model on the real ONNX Runtime: TestMain opens the environment once; tests that need
// it call needModel, which skips with the reason when the Makefile's variables are absent.
var (
	testEnv     *runtime.Env
	testEnvErr  error
	sharedModel *Model
)

func TestMain(m *testing.M) {
	if lib := runtime.LibPathFromEnv(); lib != "" {
		testEnv, testEnvErr = runtime.Open(runtime.Config{LibPath: lib})
		if testEnvErr == nil && os.Getenv("VOICED_SILERO_MODEL") != "" {
			sharedModel, testEnvErr = Load(testEnv, os.Getenv("VOICED_SILERO_MODEL"))
		}
	}
	code := m.Run()
	if sharedModel != nil {
		sharedModel.Close()
	}
	if testEnv != nil {
		testEnv.Close()
	}
	os.Exit(code)
}

func needModel(t testing.TB) *Model {
	t.Helper()
	if testEnvErr != nil {
		t.Fatalf("open onnx runtime / silero model: %v", testEnvErr)
	}
	if sharedModel == nil {
		t.Skip("VOICED_ORT_LIB and VOICED_SILERO_MODEL unset: run through make, or eval \"$(make -s env)\"")
	}
	return sharedModel
}

func newSquelch(t testing.TB, cfg Config) *Squelch {
	t.Helper()
	cfg.Model = needModel(t)
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// ---- real speech sources ----

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

const pocketsphinxData = "/usr/share/pocketsphinx/test/data"

// pocketsphinx reads a 16 kHz 16-bit mono recording from Debian's pocketsphinx-testdata
// (.raw is headerless; .wav is RIFF).
func pocketsphinx(t testing.TB, name string) []float32 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(pocketsphinxData, name))
	if os.IsNotExist(err) {
		t.Skip("pocketsphinx-testdata not installed (scripts/install-deps.sh --test)")
	}
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	if filepath.Ext(name) == ".wav" {
		b = wavData(t, b)
	}
	return int16LE(b)
}

// espeak speaks text with espeak-ng and resamples it to 16 kHz with sox.
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

func wavData(t testing.TB, b []byte) []byte {
	t.Helper()
	if len(b) < 12 || string(b[:4]) != "RIFF" || string(b[8:12]) != "WAVE" {
		t.Fatal("not a RIFF/WAVE file")
	}
	for p := 12; p+8 <= len(b); {
		id, n := string(b[p:p+4]), int(binary.LittleEndian.Uint32(b[p+4:]))
		body := b[p+8 : min(p+8+n, len(b))]
		switch id {
		case "fmt ":
			ch, rate, bits := binary.LittleEndian.Uint16(body[2:]), binary.LittleEndian.Uint32(body[4:]), binary.LittleEndian.Uint16(body[14:])
			if ch != 1 || rate != SampleRate || bits != 16 {
				t.Fatalf("want 16 kHz 16-bit mono, got %d ch %d Hz %d bit", ch, rate, bits)
			}
		case "data":
			return body
		}
		p += 8 + n + n%2
	}
	t.Fatal("no data chunk")
	return nil
}

func int16LE(b []byte) []float32 {
	out := make([]float32, len(b)/2)
	for i := range out {
		out[i] = float32(int16(binary.LittleEndian.Uint16(b[i*2:]))) / 32768
	}
	return out
}

// ---- synthetic non-speech ----

func silence(seconds float64) []float32 { return make([]float32, int(seconds*SampleRate)) }

// scaleToDBFS scales x to the given RMS level (dB relative to full-scale sine-free RMS 1.0).
func scaleToDBFS(x []float32, dbfs float64) []float32 {
	gain := math.Pow(10, dbfs/20) / rms(x)
	for i := range x {
		x[i] = float32(float64(x[i]) * gain)
	}
	return x
}

// pinkNoise is Paul Kellet's economy filter over white noise: a room-tone-like 1/f spectrum.
func pinkNoise(seconds float64, dbfs float64, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 1))
	x := make([]float32, int(seconds*SampleRate))
	var b0, b1, b2 float64
	for i := range x {
		w := r.NormFloat64()
		b0 = 0.99765*b0 + w*0.0990460
		b1 = 0.96300*b1 + w*0.2965164
		b2 = 0.57000*b2 + w*1.0526913
		x[i] = float32(b0 + b1 + b2 + w*0.1848)
	}
	return scaleToDBFS(x, dbfs)
}

// brownNoise is leaky-integrated white noise: the low rumble of ventilation and traffic.
func brownNoise(seconds float64, dbfs float64, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 2))
	x := make([]float32, int(seconds*SampleRate))
	var y float64
	for i := range x {
		y = 0.998*y + r.NormFloat64()
		x[i] = float32(y)
	}
	return scaleToDBFS(x, dbfs)
}

// whiteNoise at full scale: uniform in [-1, 1].
func whiteNoise(seconds float64, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 3))
	x := make([]float32, int(seconds*SampleRate))
	for i := range x {
		x[i] = float32(r.Float64()*2 - 1)
	}
	return x
}

// keyboardClicks is a typing-like train: a sharp decaying burst of noise every 120–250 ms,
// peaking near full scale, on a quiet floor.
func keyboardClicks(seconds float64, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 4))
	x := pinkNoise(seconds, -70, seed)
	for at := int(0.1 * SampleRate); at < len(x); at += int((0.12 + 0.13*r.Float64()) * SampleRate) {
		amp := 0.5 + 0.4*r.Float64()
		for k := 0; k < 0.012*SampleRate && at+k < len(x); k++ {
			env := math.Exp(-float64(k) / (0.0015 * SampleRate))
			x[at+k] += float32(amp * env * (r.Float64()*2 - 1))
		}
	}
	return x
}

func rms(x []float32) float64 {
	var sum float64
	for _, v := range x {
		sum += float64(v) * float64(v)
	}
	return math.Sqrt(sum / float64(max(len(x), 1)))
}

func concat(parts ...[]float32) []float32 {
	var out []float32
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// ---- driving a squelch and seeing where its admitted audio came from ----

// span is a half-open interval of stream sample positions that reached the decoder.
type span struct{ from, to int }

type runResult struct {
	spans    []span // disjoint, in order, merged where contiguous
	admitted int    // samples admitted, summed over pushes
	billed   float64
	opened   int // pushes that opened the gate
}

// drive pushes pcm in pushSamples pieces and maps every admitted sample back to its position in
// the stream: a push that admits n samples hands over positions [end-n, end).
func drive(t testing.TB, s *Squelch, pcm []float32, pushSamples int) runResult {
	t.Helper()
	var res runResult
	for at := 0; at < len(pcm); at += pushSamples {
		end := min(at+pushSamples, len(pcm))
		wasOpen := s.Open()
		out, err := s.Push(pcm[at:end])
		if err != nil {
			t.Fatalf("push at %d: %v", at, err)
		}
		if len(out) == 0 {
			continue
		}
		if !wasOpen {
			res.opened++
		}
		res.admitted += len(out)
		res.billed += Seconds(len(out))
		sp := span{end - len(out), end}
		if sp.from < 0 {
			t.Fatalf("push at %d admitted %d samples, more than the stream holds", at, len(out))
		}
		if n := len(res.spans); n > 0 && sp.from < res.spans[n-1].to {
			t.Fatalf("push at %d admitted samples [%d,%d) already admitted up to %d", at, sp.from, sp.to, res.spans[n-1].to)
		}
		if n := len(res.spans); n > 0 && sp.from == res.spans[n-1].to {
			res.spans[n-1].to = sp.to
		} else {
			res.spans = append(res.spans, sp)
		}
	}
	return res
}

func (r runResult) covers(pos int) bool {
	for _, sp := range r.spans {
		if pos >= sp.from && pos < sp.to {
			return true
		}
	}
	return false
}

func (r runResult) String() string {
	s := fmt.Sprintf("admitted %.3f s in %d spans:", Seconds(r.admitted), len(r.spans))
	for _, sp := range r.spans {
		s += fmt.Sprintf(" [%.2f,%.2f)", Seconds(sp.from), Seconds(sp.to))
	}
	return s
}
func log10(x float64) float64 { return math.Log10(x) }
