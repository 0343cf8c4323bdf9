package session

import (
	"encoding/base64"
	"fmt"
	"math"
	"testing"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/wire"
)

// appendFrame20ms is one input_audio_buffer.append of 20 ms of 24 kHz PCM16 speech-like audio
// (960 bytes, 1280 base64 characters): what a realtime client sends fifty times a second.
func appendFrame20ms() []byte {
	pcm := make([]byte, 960)
	for i := 0; i < len(pcm)/2; i++ {
		v := int16(8000*math.Sin(float64(i)*2*math.Pi*220/24000) + 3000*math.Sin(float64(i)*2*math.Pi*1730/24000))
		pcm[2*i], pcm[2*i+1] = byte(v), byte(uint16(v)>>8)
	}
	return fmt.Appendf(nil, `{"type":"input_audio_buffer.append","event_id":"evt_1234","audio":"%s"}`, base64.StdEncoding.EncodeToString(pcm))
}

// BenchmarkAppendPath: one conversation's 20 ms 24 kHz append through the session's own decode
// path, stage by stage (ns and allocations per append; the client's CPU is not in it):
//   - decode: the frame's JSON and base64 (wire.DecodeAppend, the conversation's fast path);
//   - pcm: the bytes to float samples at 24 kHz (decodeInput);
//   - resample: 24 → 16 kHz (the input buffer's streaming resampler);
//   - buffer: inputBuffer.append, all of the above but the JSON: decode, keep the raw bytes,
//     resample, buffer at 16 kHz (the buffer emptied every 10 s, as commits do);
//   - all: decode + buffer, what hearPiece costs before the turn detector and squelch hear it
//     (those are the VAD's, measured by its own benchmarks).
func BenchmarkAppendPath(b *testing.B) {
	frame := appendFrame20ms()
	ev, ok := wire.DecodeAppend(frame)
	if !ok {
		b.Fatal("the fast path refused the frame")
	}
	pcm := ev.Audio
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := wire.DecodeAppend(frame); !ok {
				b.Fatal("refused")
			}
		}
	})
	b.Run("pcm", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeInput(wire.PCM16, pcm); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("resample", func(b *testing.B) {
		samples, _ := decodeInput(wire.PCM16, pcm)
		r, err := audio.NewResampler(24000, hearRate)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			r.Process(samples)
		}
	})
	buffer := func(b *testing.B, decode bool) {
		var in inputBuffer
		if err := in.setFormat(wire.PCM16); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			audio := pcm
			if decode {
				ev, ok := wire.DecodeAppend(frame)
				if !ok {
					b.Fatal("refused")
				}
				audio = ev.Audio
			}
			if _, err := in.append(audio); err != nil {
				b.Fatal(err)
			}
			if n++; n%500 == 0 {
				in.takeAll()
			}
		}
	}
	b.Run("buffer", func(b *testing.B) { buffer(b, false) })
	b.Run("all", func(b *testing.B) { buffer(b, true) })
}
