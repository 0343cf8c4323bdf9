package audio

import (
	"errors"
	"math"
	"testing"
)

// Each encoding decodes what it encodes: PCM16 exactly, G.711 within its quantisation step.
func TestEncodingRoundTrip(t *testing.T) {
	t.Parallel()
	pcm := []int16{0, 1, -1, 100, -100, 8000, -8000, 32767, -32768}
	for _, e := range []Encoding{PCM16, Mulaw, Alaw} {
		b := e.Encode(pcm)
		if len(b) != len(pcm)*e.BytesPerSample() {
			t.Fatalf("%v: %d bytes for %d samples", e, len(b), len(pcm))
		}
		f, err := e.Decode(b)
		if err != nil {
			t.Fatalf("%v: %v", e, err)
		}
		for i, v := range Float32ToInt16(f) {
			d := int(v) - int(pcm[i])
			tol := 0
			if e != PCM16 {
				tol = max(abs(int(pcm[i]))/16, 8) // G.711's step grows with the level
			}
			if abs(d) > tol {
				t.Errorf("%v: sample %d: %d → %d", e, i, pcm[i], v)
			}
		}
	}
	if _, err := PCM16.Decode([]byte{1, 2, 3}); !errors.Is(err, ErrOddLength) {
		t.Errorf("odd PCM16: %v, want ErrOddLength", err)
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// AppendDecode gives Decode's samples after what dst holds, in dst's own array when it has room,
// and leaves dst as it was on an error.
func TestAppendDecode(t *testing.T) {
	t.Parallel()
	pcm := []int16{0, 1, -1, 100, -100, 8000, -8000, 32767, -32768}
	for _, e := range []Encoding{PCM16, Mulaw, Alaw} {
		b := e.Encode(pcm)
		want, err := e.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		dst := make([]float32, 2, 64)
		dst[0], dst[1] = 7, 8
		got, err := e.AppendDecode(dst, b)
		if err != nil || len(got) != 2+len(want) || got[0] != 7 || got[1] != 8 || &got[0] != &dst[0] {
			t.Fatalf("%v: %d samples, %v, same array %v", e, len(got), err, len(got) > 0 && &got[0] == &dst[0])
		}
		for i, v := range want {
			if got[2+i] != v {
				t.Fatalf("%v: sample %d = %v, Decode gives %v", e, i, got[2+i], v)
			}
		}
		if again, _ := e.AppendDecode(got[:0], b); len(again) != len(want) || again[0] != want[0] {
			t.Fatalf("%v: reused buffer gave %v", e, again)
		}
	}
	dst := []float32{1}
	if got, err := PCM16.AppendDecode(dst, []byte{1, 2, 3}); !errors.Is(err, ErrOddLength) || len(got) != 1 {
		t.Errorf("odd PCM16: %v, %d samples; want ErrOddLength, dst unchanged", err, len(got))
	}
}

// AppendDecode of PCM16 is PCM16ToFloat32 bit for bit, over every int16.
func TestAppendDecodePCM16EveryValue(t *testing.T) {
	t.Parallel()
	all := make([]int16, 1<<16)
	for i := range all {
		all[i] = int16(i)
	}
	b := Int16ToBytes(all)
	want, _ := PCM16ToFloat32(b)
	got, err := PCM16.AppendDecode(nil, b)
	if err != nil || len(got) != len(want) {
		t.Fatalf("%d samples, %v", len(got), err)
	}
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%d: %v, want %v", all[i], got[i], want[i])
		}
	}
}

// BenchmarkAppendDecode20ms: one 20 ms 24 kHz PCM16 append decoded into a reused buffer.
func BenchmarkAppendDecode20ms(b *testing.B) {
	pcm := Int16ToBytes(make([]int16, 480))
	var dst []float32
	b.ReportAllocs()
	for b.Loop() {
		dst, _ = PCM16.AppendDecode(dst[:0], pcm)
	}
}
