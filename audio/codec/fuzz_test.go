package codec

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// Run these with -fuzzminimizetime 1s (make fuzz does): at Go's default of 60 s a worker spends
// a minute shrinking each new input, counted as no execs, and fuzzing reads as stalled (LLM.md).

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

// FuzzLiveDecoder: whatever the bytes, in whatever chunks, the live Ogg and WebM demuxers and
// libopus end with audio or an error by name, never a panic, and hand out no more samples than
// the bytes can hold.
func FuzzLiveDecoder(f *testing.F) {
	var ogg bytes.Buffer
	enc, err := NewEncoder(Opus, 24000, &ogg)
	if err != nil {
		f.Fatal(err)
	}
	enc.Write(speechLike(24000)[:4800])
	enc.Close()
	f.Add(ogg.Bytes(), uint16(100))
	// A WebM of one Opus track, one SimpleBlock: EBML header, Segment and Cluster of unknown size.
	webm := []byte("\x1a\x45\xdf\xa3\x84webm\x18\x53\x80\x67\x01\xff\xff\xff\xff\xff\xff\xff" +
		"\x16\x54\xae\x6b\x93\xae\x91\xd7\x81\x01\x86\x86A_OPUS\x63\xa2\x83Opu" +
		"\x1f\x43\xb6\x75\xff\xe7\x81\x00\xa3\x86\x81\x00\x00\x80\xf8\xff")
	f.Add(webm, uint16(7))
	f.Fuzz(func(t *testing.T, data []byte, step uint16) {
		for _, format := range LiveFormats {
			d, err := NewLiveDecoder(format, 16000)
			if err != nil {
				t.Fatal(err)
			}
			total := 0
			emit := func(pcm []float32) error { total += len(pcm); return nil }
			n := max(1, int(step))
			for at := 0; at < len(data) && err == nil; at += n {
				err = d.Write(data[at:min(at+n, len(data))], emit)
			}
			if err == nil {
				err = d.End(emit)
			}
			d.Close()
			if err != nil && !errors.Is(err, ErrBroken) && !errors.Is(err, ErrUnsupported) {
				t.Fatalf("%s: error not by name: %v", format, err)
			}
			// An Opus packet of ≥ 1 byte holds ≤ 120 ms: 1920 samples at 16 kHz.
			if total > 1920*len(data)+256 {
				t.Fatalf("%s: %d samples from %d bytes", format, total, len(data))
			}
		}
	})
}
