package audio

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"
)

// BytesToInt16 reads PCM16 little-endian bytes. An odd byte count is ErrOddLength.
func BytesToInt16(b []byte) ([]int16, error) {
	if len(b)%2 != 0 {
		return nil, fmt.Errorf("audio: %d bytes: %w", len(b), ErrOddLength)
	}
	out := make([]int16, len(b)/2)
	for i := range out {
		out[i] = int16(binary.LittleEndian.Uint16(b[2*i:]))
	}
	return out, nil
}

// Int16ToBytes writes samples as PCM16 little-endian bytes.
func Int16ToBytes(s []int16) []byte {
	return AppendInt16Bytes(make([]byte, 0, 2*len(s)), s)
}

// AppendInt16Bytes appends samples to dst as PCM16 little-endian bytes.
func AppendInt16Bytes(dst []byte, s []int16) []byte {
	for _, v := range s {
		dst = binary.LittleEndian.AppendUint16(dst, uint16(v))
	}
	return dst
}

// Int16ToFloat32 scales samples to [-1, 1) as openai/whisper does: v / 32768.
func Int16ToFloat32(s []int16) []float32 {
	out := make([]float32, len(s))
	for i, v := range s {
		out[i] = float32(v) / 32768
	}
	return out
}

// Float32ToInt16 scales by 32768, rounds half away from zero and clips to the int16 range, so
// Int16ToFloat32 followed by Float32ToInt16 is exact. NaN becomes 0.
func Float32ToInt16(f []float32) []int16 {
	out := make([]int16, len(f))
	for i, v := range f {
		out[i] = floatToInt16(v)
	}
	return out
}

func floatToInt16(v float32) int16 {
	x := math.Round(float64(v) * 32768)
	switch {
	case x >= math.MaxInt16:
		return math.MaxInt16
	case x <= math.MinInt16:
		return math.MinInt16
	case x != x: // NaN
		return 0
	}
	return int16(x)
}

// PCM16ToFloat32 reads PCM16 little-endian bytes straight to floats (v / 32768).
func PCM16ToFloat32(b []byte) ([]float32, error) {
	if len(b)%2 != 0 {
		return nil, fmt.Errorf("audio: %d bytes: %w", len(b), ErrOddLength)
	}
	out := make([]float32, len(b)/2)
	for i := range out {
		out[i] = float32(int16(binary.LittleEndian.Uint16(b[2*i:]))) / 32768
	}
	return out, nil
}

// Float32ToPCM16 writes floats as PCM16 little-endian bytes, rounding and clipping as
// Float32ToInt16.
func Float32ToPCM16(f []float32) []byte {
	out := make([]byte, 2*len(f))
	for i, v := range f {
		binary.LittleEndian.PutUint16(out[2*i:], uint16(floatToInt16(v)))
	}
	return out
}

// RMS is the root mean square of x; 0 for no samples.
func RMS(x []float32) float64 {
	if len(x) == 0 {
		return 0
	}
	var sum float64
	for _, v := range x {
		sum += float64(v) * float64(v)
	}
	return math.Sqrt(sum / float64(len(x)))
}

// DBFS is 20·log10(RMS(x)): 0 dB for a full-scale square wave, about -3.01 dB for a full-scale
// sine, -Inf for silence or no samples.
func DBFS(x []float32) float64 {
	return 20 * math.Log10(RMS(x))
}

// Duration of n samples at rate samples per second, rounded to the nanosecond.
func Duration(samples, rate int) time.Duration {
	if rate <= 0 {
		return 0
	}
	sec := int64(samples) / int64(rate)
	rem := int64(samples) % int64(rate)
	return time.Duration(sec)*time.Second + time.Duration((rem*int64(time.Second)+int64(rate)/2)/int64(rate))
}
