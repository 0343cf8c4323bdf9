package audio

import (
	"archive/zip"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// readNPZ reads the float32 arrays of a .npz (a zip of .npy v1/v2 files) with their shapes.
func readNPZ(t *testing.T, path string) map[string]npyArray {
	t.Helper()
	z, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	out := map[string]npyArray{}
	for _, f := range z.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		a, err := parseNPY(b)
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		out[strings.TrimSuffix(f.Name, ".npy")] = a
	}
	return out
}

type npyArray struct {
	shape []int
	data  []float32
}

var npyShape = regexp.MustCompile(`'shape':\s*\(([0-9, ]*)\)`)

func parseNPY(b []byte) (npyArray, error) {
	if len(b) < 10 || string(b[:6]) != "\x93NUMPY" {
		return npyArray{}, fmt.Errorf("not .npy")
	}
	var hlen, off int
	switch b[6] {
	case 1:
		hlen, off = int(binary.LittleEndian.Uint16(b[8:])), 10
	case 2, 3:
		hlen, off = int(binary.LittleEndian.Uint32(b[8:])), 12
	default:
		return npyArray{}, fmt.Errorf("npy version %d", b[6])
	}
	header := string(b[off : off+hlen])
	if !strings.Contains(header, "'descr': '<f4'") || !strings.Contains(header, "'fortran_order': False") {
		return npyArray{}, fmt.Errorf("want little-endian float32 C order, header %q", header)
	}
	sm := npyShape.FindStringSubmatch(header)
	if sm == nil {
		return npyArray{}, fmt.Errorf("no shape in %q", header)
	}
	a := npyArray{}
	count := 1
	for _, s := range strings.Split(sm[1], ",") {
		if s = strings.TrimSpace(s); s != "" {
			d, _ := strconv.Atoi(s)
			a.shape = append(a.shape, d)
			count *= d
		}
	}
	body := b[off+hlen:]
	if len(body) != 4*count {
		return npyArray{}, fmt.Errorf("%d data bytes for shape %v", len(body), a.shape)
	}
	a.data = make([]float32, count)
	for i := range a.data {
		a.data[i] = math.Float32frombits(binary.LittleEndian.Uint32(body[4*i:]))
	}
	return a, nil
}

// The filterbank against openai/whisper's published assets/mel_filters.npz.
func TestMelFiltersMatchOpenAI(t *testing.T) {
	t.Parallel()
	arrays := readNPZ(t, sharedData(t, "whisper", "mel_filters.npz"))
	for _, nMels := range []int{80, 128} {
		t.Run(fmt.Sprint(nMels), func(t *testing.T) {
			ref, ok := arrays[fmt.Sprintf("mel_%d", nMels)]
			if !ok || len(ref.shape) != 2 || ref.shape[0] != nMels || ref.shape[1] != 201 {
				t.Fatalf("mel_%d missing or shaped %v", nMels, ref.shape)
			}
			got := MelFilters(nMels, WhisperNFFT, WhisperSampleRate)
			worst := 0.0
			for m := range nMels {
				for k := range 201 {
					d := math.Abs(float64(got[m][k] - ref.data[m*201+k]))
					if d > 1e-6 {
						t.Fatalf("filter %d bin %d: %v, openai %v", m, k, got[m][k], ref.data[m*201+k])
					}
					worst = max(worst, d)
				}
			}
			t.Logf("mel_%d: max |diff| %.2g", nMels, worst)
		})
	}
}

// Values published in docs/models.md §1.2, pinned without the reference files.
func TestMelFiltersKnownValues(t *testing.T) {
	t.Parallel()
	w := MelFilters(80, 400, 16000)
	var sum float64
	for m := range w {
		for _, v := range w[m] {
			sum += float64(v)
		}
	}
	if math.Abs(sum-1.999024) > 1e-5 {
		t.Errorf("sum of mel_80 = %.6f, want 1.999024", sum)
	}
	if math.Abs(float64(w[0][1])-0.024862595) > 1e-9 {
		t.Errorf("mel_80[0][1] = %v, want 0.024862595", w[0][1])
	}
	for k, v := range w[0] {
		if k != 1 && v != 0 {
			t.Errorf("mel_80[0][%d] = %v, want 0", k, v)
		}
	}
}

func TestReflectPad(t *testing.T) {
	t.Parallel()
	buf := []float32{0, 0, 0, 1, 2, 3, 4, 5, 0, 0, 0}
	reflectPad(buf, 3)
	want := []float32{4, 3, 2, 1, 2, 3, 4, 5, 4, 3, 2}
	for i := range buf {
		if buf[i] != want[i] {
			t.Fatalf("reflectPad = %v, want %v", buf, want)
		}
	}
}

// The FFT path against a direct O(n²) DFT of the windowed frame.
func TestMelPowerSpectrumMatchesDFT(t *testing.T) {
	t.Parallel()
	m := newMelWorker()
	rng := rand.New(rand.NewPCG(5, 6))
	frame := make([]float32, WhisperNFFT)
	for trial := range 5 {
		for i := range frame {
			frame[i] = float32(rng.Float64()*2 - 1)
		}
		m.powerSpectrum(frame)
		for k := 0; k < melBins; k++ {
			var x complex128
			for n, v := range frame {
				x += complex(float64(v)*hannPeriodic[n], 0) * cmplx.Exp(complex(0, -2*math.Pi*float64(k*n)/WhisperNFFT))
			}
			want := real(x)*real(x) + imag(x)*imag(x)
			if math.Abs(m.power[k]-want) > 1e-9*max(1, want) {
				t.Fatalf("trial %d bin %d: FFT power %v, DFT %v", trial, k, m.power[k], want)
			}
		}
	}
	// The window is periodic: w[0] = 0, w[200] = 1, and it is not symmetric about 199.5.
	if hannPeriodic[0] != 0 || hannPeriodic[200] != 1 || hannPeriodic[1] != hannPeriodic[399] {
		t.Fatalf("window: w0 %v w200 %v w1 %v w399 %v", hannPeriodic[0], hannPeriodic[200], hannPeriodic[1], hannPeriodic[399])
	}
}

// naiveLogMel is docs/models.md §1.1 written out the slow way — dense filters, direct DFT, numpy
// padding by index — independent of Compute's buffers and sparsity.
func naiveLogMel(pcm []float32, nMels int) []float32 {
	x := make([]float64, WhisperSamples)
	for i := 0; i < len(pcm) && i < WhisperSamples; i++ {
		x[i] = float64(pcm[i])
	}
	N := WhisperSamples
	padded := make([]float64, N+400)
	copy(padded[200:], x)
	for i := 1; i <= 200; i++ {
		padded[200-i] = x[i]
		padded[200+N-1+i] = x[N-1-i]
	}
	filters := MelFilters(nMels, 400, 16000)
	cosT, sinT := make([]float64, 400), make([]float64, 400)
	for i := range cosT {
		cosT[i], sinT[i] = math.Cos(2*math.Pi*float64(i)/400), math.Sin(2*math.Pi*float64(i)/400)
	}
	spec := make([]float64, nMels*3000)
	power := make([]float64, 201)
	frame := make([]float64, 400)
	for t := 0; t < 3000; t++ {
		silent := true
		for n := range 400 {
			frame[n] = padded[t*160+n] * (0.5 - 0.5*cosT[n])
			silent = silent && frame[n] == 0
		}
		if silent { // all power is 0, every band floors at 1e-10
			for m := range nMels {
				spec[m*3000+t] = -10
			}
			continue
		}
		for k := range 201 {
			var re, im float64
			for n := range 400 {
				re += frame[n] * cosT[(k*n)%400]
				im -= frame[n] * sinT[(k*n)%400]
			}
			power[k] = re*re + im*im
		}
		for m := range nMels {
			var s float64
			for k := range 201 {
				s += float64(filters[m][k]) * power[k]
			}
			spec[m*3000+t] = math.Log10(math.Max(s, 1e-10))
		}
	}
	mx := math.Inf(-1)
	for _, v := range spec {
		mx = math.Max(mx, v)
	}
	out := make([]float32, len(spec))
	for i, v := range spec {
		out[i] = float32((math.Max(v, mx-8) + 4) / 4)
	}
	return out
}

func TestLogMelMatchesNaive(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 8))
	for name, pcm := range map[string][]float32{
		"0.5 s noise and tone": func() []float32 {
			s := sine(8000, 16000, 1234, 0.3, 0.1)
			for i := range s {
				s[i] += float32(rng.NormFloat64() * 0.05)
			}
			return s
		}(),
		"quiet 0.2 s": sine(3200, 16000, 300, 0.001, 0),
	} {
		for _, nMels := range []int{80, 128} {
			t.Run(fmt.Sprintf("%s/%d", name, nMels), func(t *testing.T) {
				got, want := LogMel(pcm, nMels), naiveLogMel(pcm, nMels)
				worst := 0.0
				for i := range want {
					worst = max(worst, math.Abs(float64(got[i]-want[i])))
				}
				if worst > 1e-5 {
					t.Fatalf("max |LogMel - naive| = %g", worst)
				}
			})
		}
	}
}

func TestLogMelShapeAndLength(t *testing.T) {
	t.Parallel()
	long := make([]float32, WhisperSamples+5000)
	for i := range long {
		long[i] = float32(math.Sin(float64(i) * 0.05))
	}
	cut := LogMel(long, 80)
	exact := LogMel(long[:WhisperSamples], 80)
	if len(cut) != 80*3000 {
		t.Fatalf("len = %d", len(cut))
	}
	for i := range cut {
		if cut[i] != exact[i] {
			t.Fatalf("input past 30 s changed feature %d", i)
		}
	}
	// A reused Mel gives the same answer with no residue from the previous call.
	m := NewMel(80)
	m.Compute(nil, long)
	short := sine(8000, 16000, 440, 0.5, 0)
	if a, b := m.Compute(nil, short), LogMel(short, 80); !equalF32(a, b) {
		t.Fatal("a reused Mel differs from a fresh one")
	}
}

func equalF32(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Silence: every band is log10(1e-10) = -10, the global max is -10, so every feature is
// (-10+4)/4 = -1.5.
func TestLogMelSilence(t *testing.T) {
	t.Parallel()
	for _, in := range [][]float32{nil, make([]float32, 16000), make([]float32, WhisperSamples)} {
		for i, v := range LogMel(in, 80) {
			if v != -1.5 {
				t.Fatalf("len %d: feature %d = %v, want -1.5", len(in), i, v)
			}
		}
	}
}

func TestClampScale(t *testing.T) {
	t.Parallel()
	// One band: log10 values of mel energies 1, 1e-3, 1e-12 (floored to 1e-10), 100; the frames
	// past the 4 computed are all padding (log10 1e-10 = -10), written without being stored.
	spec := []float64{0, -3, -10, 2}
	dst := make([]float32, WhisperFrames)
	for i := range dst {
		dst[i] = 99
	}
	clampScale(dst, spec, 1, 4, 2)
	want := []float32{1, 0.25, -0.5, 1.5} // floor 2-8 = -6 → (-6+4)/4
	if !equalF32(dst[:4], want) {
		t.Fatalf("clampScale = %v, want %v", dst[:4], want)
	}
	for i, v := range dst[4:] {
		if v != -0.5 {
			t.Fatalf("padding frame %d = %v, want -0.5", 4+i, v)
		}
	}
	// Two bands, frame-major in, mel-major out.
	dst = make([]float32, 2*WhisperFrames)
	clampScale(dst, []float64{0, 1, 2, 3}, 2, 2, 3)
	if got := []float32{dst[0], dst[1], dst[WhisperFrames], dst[WhisperFrames+1]}; !equalF32(got, []float32{1, 1.5, 1.25, 1.75}) {
		t.Fatalf("two bands: %v", got)
	}
}

// A pure tone at filter m's peak frequency lights band m most — what the codec fixture relies on.
func TestLogMelToneLightsItsBand(t *testing.T) {
	t.Parallel()
	edges := MelBandEdges(80, 16000)
	for _, m := range []int{5, 46, 72, 78} { // 46..72 span the codec fixture's high tones
		t.Run(fmt.Sprintf("band %d at %.0f Hz", m, edges[m+1]), func(t *testing.T) {
			f := LogMel(sine(16000, 16000, edges[m+1], 0.3, 0), 80)
			for _, frame := range []int{20, 50, 80} {
				best := 0
				for b := range 80 {
					if f[b*3000+frame] > f[best*3000+frame] {
						best = b
					}
				}
				if best != m {
					t.Fatalf("frame %d: band %d is loudest, want %d", frame, best, m)
				}
			}
			top := f[0]
			for _, v := range f {
				top = max(top, v)
			}
			if v := f[m*3000+50]; top-v > 0.01 {
				t.Fatalf("tone band feature %v, global maximum %v", v, top)
			}
		})
	}
}

// jfk.wav through the whole front end: finite, within the 2.0 feature range below the maximum,
// the maximum in speech, the padded tail at the floor.
func TestLogMelJFK(t *testing.T) {
	t.Parallel()
	f, err := os.Open(sharedData(t, "whisper", "jfk.wav"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pcm, rate, err := DecodeWAV(f)
	if err != nil || rate != 16000 {
		t.Fatalf("jfk.wav: rate %d, %v", rate, err)
	}
	feat := LogMel(pcm, 80)
	lo, hi := float32(math.Inf(1)), float32(math.Inf(-1))
	hiFrame := 0
	for i, v := range feat {
		if v != v || math.IsInf(float64(v), 0) {
			t.Fatalf("feature %d = %v", i, v)
		}
		if v > hi {
			hi, hiFrame = v, i%3000
		}
		lo = min(lo, v)
	}
	if hi-lo > 2+1e-6 {
		t.Fatalf("range %v..%v exceeds the 8/4 = 2 clamp", lo, hi)
	}
	speechFrames := len(pcm) / 160
	if hiFrame >= speechFrames {
		t.Fatalf("maximum at frame %d, after the speech (%d frames)", hiFrame, speechFrames)
	}
	for b := range 80 {
		for _, frame := range []int{speechFrames + 50, 2999} {
			if v := feat[b*3000+frame]; v != lo {
				t.Fatalf("band %d frame %d in the padded tail = %v, want the floor %v", b, frame, v, lo)
			}
		}
	}
	var mean float64
	for _, v := range feat {
		mean += float64(v)
	}
	t.Logf("jfk.wav: features %.4f..%.4f (max at frame %d), mean %.4f", lo, hi, hiFrame, mean/float64(len(feat)))
}

func BenchmarkLogMel30s(b *testing.B) {
	rng := rand.New(rand.NewPCG(9, 10))
	pcm := make([]float32, WhisperSamples)
	for i := range pcm {
		pcm[i] = float32(rng.NormFloat64() * 0.1)
	}
	for _, nMels := range []int{80, 128} {
		b.Run(fmt.Sprint(nMels), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				LogMel(pcm, nMels)
			}
		})
	}
	b.Run("80 reused Mel and dst", func(b *testing.B) {
		m := NewMel(80)
		dst := make([]float32, 80*3000)
		b.ReportAllocs()
		for b.Loop() {
			m.Compute(dst, pcm)
		}
	})
}
