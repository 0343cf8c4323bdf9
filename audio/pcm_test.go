package audio

import (
	"errors"
	"math"
	"testing"
	"time"
)

func TestPCMBytes(t *testing.T) {
	t.Parallel()
	s := []int16{0, 1, -1, 32767, -32768, 0x1234}
	b := Int16ToBytes(s)
	want := []byte{0, 0, 1, 0, 0xff, 0xff, 0xff, 0x7f, 0x00, 0x80, 0x34, 0x12}
	if string(b) != string(want) {
		t.Fatalf("Int16ToBytes = % x, want % x", b, want)
	}
	back, err := BytesToInt16(b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range s {
		if back[i] != s[i] {
			t.Fatalf("BytesToInt16[%d] = %d, want %d", i, back[i], s[i])
		}
	}
	f, err := PCM16ToFloat32(b)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range Int16ToFloat32(s) {
		if f[i] != v || v != float32(s[i])/32768 {
			t.Fatalf("float[%d] = %v / %v", i, f[i], v)
		}
	}
	if string(Float32ToPCM16(f)) != string(b) {
		t.Fatal("Float32ToPCM16 does not invert PCM16ToFloat32")
	}
}

func TestOddLength(t *testing.T) {
	t.Parallel()
	for name, fn := range map[string]func([]byte) error{
		"BytesToInt16":   func(b []byte) error { _, err := BytesToInt16(b); return err },
		"PCM16ToFloat32": func(b []byte) error { _, err := PCM16ToFloat32(b); return err },
	} {
		t.Run(name, func(t *testing.T) {
			if err := fn([]byte{1, 2, 3}); !errors.Is(err, ErrOddLength) {
				t.Fatalf("err = %v, want ErrOddLength", err)
			}
			if err := fn(nil); err != nil {
				t.Fatalf("empty input: %v", err)
			}
		})
	}
}

func TestFloat32ToInt16(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		in   float32
		want int16
	}{
		"zero":               {0, 0},
		"one clips":          {1, 32767},
		"minus one":          {-1, -32768},
		"over clips":         {1.5, 32767},
		"under clips":        {-7, -32768},
		"rounds half up":     {0.5 / 32768, 1},
		"rounds half away":   {-0.5 / 32768, -1},
		"rounds down":        {0.49 / 32768, 0},
		"half scale":         {0.5, 16384},
		"NaN":                {float32(math.NaN()), 0},
		"+Inf":               {float32(math.Inf(1)), 32767},
		"-Inf":               {float32(math.Inf(-1)), -32768},
		"just under 1 (int)": {32766.6 / 32768, 32767},
	} {
		t.Run(name, func(t *testing.T) {
			if got := Float32ToInt16([]float32{c.in})[0]; got != c.want {
				t.Fatalf("Float32ToInt16(%v) = %d, want %d", c.in, got, c.want)
			}
		})
	}
	// Every int16 survives the float round trip.
	all := make([]int16, 65536)
	for i := range all {
		all[i] = int16(i - 32768)
	}
	back := Float32ToInt16(Int16ToFloat32(all))
	for i := range all {
		if back[i] != all[i] {
			t.Fatalf("round trip of %d gave %d", all[i], back[i])
		}
	}
}

func TestRMSAndDBFS(t *testing.T) {
	t.Parallel()
	sine := make([]float32, 16000)
	for i := range sine {
		sine[i] = float32(math.Sin(2 * math.Pi * 1000 * float64(i) / 16000))
	}
	square := []float32{1, -1, 1, -1}
	for name, c := range map[string]struct {
		in        []float32
		rms, dbfs float64
	}{
		"full-scale sine":   {sine, 1 / math.Sqrt2, -3.0103},
		"full-scale square": {square, 1, 0},
		"half square":       {[]float32{0.5, -0.5}, 0.5, -6.0206},
	} {
		t.Run(name, func(t *testing.T) {
			if got := RMS(c.in); math.Abs(got-c.rms) > 1e-6 {
				t.Errorf("RMS = %v, want %v", got, c.rms)
			}
			if got := DBFS(c.in); math.Abs(got-c.dbfs) > 1e-3 {
				t.Errorf("DBFS = %v, want %v", got, c.dbfs)
			}
		})
	}
	if RMS(nil) != 0 || !math.IsInf(DBFS(make([]float32, 10)), -1) {
		t.Error("silence should be RMS 0, -Inf dBFS")
	}
}

func TestDuration(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		n, rate int
		want    time.Duration
	}{
		"one second 16k":   {16000, 16000, time.Second},
		"80 ms at 24k":     {1920, 24000, 80 * time.Millisecond},
		"one sample 44.1k": {1, 44100, 22676 * time.Nanosecond},
		"30 s":             {WhisperSamples, WhisperSampleRate, 30 * time.Second},
		"zero rate":        {100, 0, 0},
		"ten hours at 48k": {48000 * 36000, 48000, 10 * time.Hour},
	} {
		t.Run(name, func(t *testing.T) {
			if got := Duration(c.n, c.rate); got != c.want {
				t.Fatalf("Duration(%d, %d) = %v, want %v", c.n, c.rate, got, c.want)
			}
		})
	}
}
