package codec

import (
	"bytes"
	"errors"
	"io"
	"os"
	"testing"
	"time"
)

// tenSeconds is 10 s of speechLike audio at 24 kHz.
func tenSeconds() []int16 {
	one := speechLike(24000)
	var out []int16
	for len(out) < 240000 {
		out = append(out, one...)
	}
	return out[:240000]
}

// BenchmarkEncode: encoding 10 s of 24 kHz mono in 1 s pieces (as sentences arrive), the
// encoder made and closed each time. ms/audio-s is wall time per second of audio (AAC: ffmpeg's
// process start and its CPU in another process, both counted as wall). first-ms is the time
// from NewEncoder to the first byte out after the first piece (AAC: until ffmpeg's first byte).
func BenchmarkEncode(b *testing.B) {
	in := tenSeconds()
	for _, f := range []string{MP3, Opus, AAC, FLAC, WAV} {
		b.Run(f, func(b *testing.B) {
			var first time.Duration
			for b.Loop() {
				start := time.Now()
				got := make(chan struct{})
				w := &firstWriter{got: got}
				enc, err := NewEncoder(f, 24000, w)
				if err != nil {
					b.Fatal(err)
				}
				if err := enc.Write(in[:24000]); err != nil {
					b.Fatal(err)
				}
				select {
				case <-got:
				case <-time.After(5 * time.Second):
					b.Fatal("no byte 5 s after the first second of audio")
				}
				first += time.Since(start)
				for i := 24000; i < len(in); i += 24000 {
					if err := enc.Write(in[i : i+24000]); err != nil {
						b.Fatal(err)
					}
				}
				if err := enc.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N)/10, "ms/audio-s")
			b.ReportMetric(float64(first.Microseconds())/1000/float64(b.N), "first-ms")
		})
	}
}

// firstWriter discards, closing got at the first byte.
type firstWriter struct {
	got  chan struct{}
	seen bool
}

func (w *firstWriter) Write(p []byte) (int, error) {
	if !w.seen && len(p) > 0 {
		w.seen = true
		close(w.got)
	}
	return len(p), nil
}

// BenchmarkDecode: decoding 10 s that FFmpeg encoded, per format, to the end (ms/audio-s: wall
// per second of audio; the ffmpeg-read formats include the process start).
func BenchmarkDecode(b *testing.B) {
	needFFmpeg(b)
	in := tenSeconds()
	for _, c := range []struct {
		ext  string
		args []string
	}{
		{"mp3", []string{"-c:a", "libmp3lame", "-b:a", "64k"}},
		{"ogg", []string{"-c:a", "libopus", "-b:a", "48k"}},
		{"flac", nil},
		{"m4a", []string{"-c:a", "aac", "-b:a", "64k"}},
		{"webm", []string{"-c:a", "libopus"}},
	} {
		b.Run(c.ext, func(b *testing.B) {
			data := encodeForBench(b, in, c.ext, c.args...)
			kind, _ := Sniff(data[:SniffLen])
			for b.Loop() {
				s, err := Open(bytes.NewReader(data), int64(len(data)), kind, 60)
				if err != nil {
					b.Fatal(err)
				}
				for {
					_, err := s.Next(s.Rate())
					if errors.Is(err, io.EOF) {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				s.Close()
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N)/10, "ms/audio-s")
		})
	}
}

func encodeForBench(b *testing.B, in []int16, ext string, args ...string) []byte {
	b.Helper()
	out, err := os.ReadFile(encodeWithFFmpegTB(b, in, ext, args...))
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// BenchmarkLiveDecode: 10 s of Opus in WebM and Ogg as MediaRecorder streams it (piped: unknown
// sizes), fed to a LiveDecoder in 4000-byte chunks (≈ 0.5 s at 64 kbit/s), to 16 kHz.
// ms/audio-s is wall time per second of audio: demuxing, libopus, the 48→16 kHz resampler.
func BenchmarkLiveDecode(b *testing.B) {
	needFFmpeg(b)
	in := tenSeconds()
	for _, format := range LiveFormats {
		b.Run(format, func(b *testing.B) {
			data := ffmpegPiped(b, in, format, "-c:a", "libopus", "-b:a", "64k")
			for b.Loop() {
				if _, err := liveDecode(b, format, data, 4000); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N)/10, "ms/audio-s")
		})
	}
}
