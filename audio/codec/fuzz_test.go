package codec

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// FuzzDecodeInProcess: whatever the bytes, Sniff and the decoders voiced runs in its own process
// (mp3: the frame walk and go-mp3; Ogg Opus: the demuxer and libopus) end with audio, io.EOF or
// an error by name, never a panic, and hand out no more samples than the bytes can hold.
func FuzzDecodeInProcess(f *testing.F) {
	var mp3, ogg bytes.Buffer
	for _, c := range []struct {
		format string
		out    *bytes.Buffer
	}{{MP3, &mp3}, {Opus, &ogg}} {
		enc, err := NewEncoder(c.format, 24000, c.out)
		if err != nil {
			f.Fatal(err)
		}
		enc.Write(speechLike(24000)[:4800])
		enc.Close()
	}
	f.Add(mp3.Bytes())
	f.Add(ogg.Bytes())
	f.Add([]byte("ID3\x04\x00\x00\x00\x00\x00\x10"))
	f.Add([]byte("OggS\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x13OpusHead"))
	f.Fuzz(func(t *testing.T, data []byte) {
		kind, ok := Sniff(data[:min(len(data), SniffLen)])
		if !ok || (kind != KindMP3 && kind != KindOggOpus) || mp3Version25(bytes.NewReader(data)) {
			return
		}
		s, err := Open(bytes.NewReader(data), int64(len(data)), kind, 60)
		if err != nil {
			if !errors.Is(err, ErrBroken) && !errors.Is(err, ErrUnsupported) {
				t.Fatalf("%s: error not by name: %v", kind, err)
			}
			return
		}
		defer s.Close()
		perByte := 48 // an mp3 frame is ≥ 24 bytes for ≤ 576 samples (MPEG 2, 8 kbit/s, 24 kHz)
		if kind == KindOggOpus {
			perByte = 5760 // an Opus packet: ≥ 1 byte (and its lacing) for ≤ 120 ms at 48 kHz
		}
		total := 0
		for {
			b, err := s.Next(4096)
			total += len(b)
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, ErrBroken) {
					t.Fatalf("%s: error not by name: %v", kind, err)
				}
				break
			}
			if total > perByte*len(data)+4096 {
				t.Fatalf("%s: %d samples from %d bytes", kind, total, len(data))
			}
		}
	})
}
