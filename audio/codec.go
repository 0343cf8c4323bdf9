package audio

import (
	"encoding/binary"
	"fmt"
	"slices"
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
	out, err := e.AppendDecode(make([]float32, 0, len(b)/e.BytesPerSample()), b)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// AppendDecode is Decode appending the samples to dst (reused, where it has room): a stream's
// decoder keeps one buffer instead of allocating per chunk. On error dst is returned unchanged.
func (e Encoding) AppendDecode(dst []float32, b []byte) ([]float32, error) {
	switch e {
	case Mulaw, Alaw:
		table := &mulawTable
		if e == Alaw {
			table = &alawTable
		}
		dst = slices.Grow(dst, len(b))
		for _, c := range b {
			dst = append(dst, float32(table[c])/32768)
		}
		return dst, nil
	default:
		if len(b)%2 != 0 {
			return dst, fmt.Errorf("audio: %d bytes: %w", len(b), ErrOddLength)
		}
		n := len(dst)
		dst = slices.Grow(dst, len(b)/2)[:n+len(b)/2]
		out := dst[n:]
		for i := range out {
			out[i] = float32(int16(binary.LittleEndian.Uint16(b[2*i:]))) / 32768
		}
		return dst, nil
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
