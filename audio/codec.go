package audio

import (
	"fmt"
)

// Encoding is a sample encoding a realtime client sends or hears: the one place the codecs of the
// conversation meet (pcm16 and G.711 here; Opus, on WebRTC tracks, in the cgo subpackage opus).
type Encoding uint8

const (
	// PCM16: signed 16-bit little-endian.
	PCM16 Encoding = iota
	// Mulaw: G.711 μ-law, one byte a sample.
	Mulaw
	// Alaw: G.711 A-law, one byte a sample.
	Alaw
)

func (e Encoding) String() string {
	switch e {
	case PCM16:
		return "pcm16"
	case Mulaw:
		return "g711_ulaw"
	case Alaw:
		return "g711_alaw"
	}
	return fmt.Sprintf("Encoding(%d)", int(e))
}

// BytesPerSample is 2 for PCM16, 1 for G.711.
func (e Encoding) BytesPerSample() int {
	if e == PCM16 {
		return 2
	}
	return 1
}

// Decode reads encoded bytes as float samples (int16/32768). Odd-length PCM16 wraps ErrOddLength.
func (e Encoding) Decode(b []byte) ([]float32, error) {
	switch e {
	case Mulaw:
		return Int16ToFloat32(MulawToInt16(b)), nil
	case Alaw:
		return Int16ToFloat32(AlawToInt16(b)), nil
	default:
		return PCM16ToFloat32(b)
	}
}

// Encode writes int16 samples in the encoding.
func (e Encoding) Encode(pcm []int16) []byte {
	switch e {
	case Mulaw:
		return Int16ToMulaw(pcm)
	case Alaw:
		return Int16ToAlaw(pcm)
	default:
		return Int16ToBytes(pcm)
	}
}
