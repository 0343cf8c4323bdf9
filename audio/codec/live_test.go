package codec

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"sync"
	"testing"

	"github.com/voiced/voiced/audio"
)

// ffmpegPiped encodes in (24 kHz mono) with ffmpeg to its stdout, as format: a muxer writing
// to a pipe cannot seek back, so a WebM's Segment and Clusters have unknown sizes — what a
// browser's MediaRecorder writes.
func ffmpegPiped(t testing.TB, in []int16, format string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("ffmpeg", append(append([]string{"-v", "error", "-f", "s16le", "-ar", "24000", "-ac", "1", "-i", "pipe:0"}, args...), "-f", format, "pipe:1")...)
	cmd.Stdin = bytes.NewReader(audio.Int16ToBytes(in))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ffmpeg %s: %v", format, err)
	}
	return out
}

// liveDecode feeds data to a LiveDecoder of format in chunks of step bytes (cut anywhere).
func liveDecode(t testing.TB, format string, data []byte, step int) ([]float32, error) {
	t.Helper()
	d, err := NewLiveDecoder(format, 16000)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var out []float32
	emit := func(pcm []float32) error { out = append(out, pcm...); return nil }
	for at := 0; at < len(data); at += step {
		if err := d.Write(data[at:min(at+step, len(data))], emit); err != nil {
			return out, err
		}
	}
	return out, d.End(emit)
}

// TestLiveDecoder: Ogg Opus and WebM Opus made by FFmpeg (a file, and piped with unknown
// sizes as MediaRecorder writes), fed in chunks cut anywhere (1 byte to the whole file), decode
// to the same 16 kHz audio every time, lined up with the input, 1.5 s long.
func TestLiveDecoder(t *testing.T) {
	needFFmpeg(t)
	in := speechLike(24000)
	want := audio.Float32ToInt16(audio.Resample(audio.Int16ToFloat32(in), 24000, 16000))
	file := func(ext string, args ...string) []byte {
		data, err := os.ReadFile(encodeWithFFmpeg(t, in, ext, args...))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	for _, c := range []struct {
		name, format string
		data         []byte
	}{
		{"ogg file", LiveOgg, file("ogg", "-c:a", "libopus", "-b:a", "48k")},
		{"ogg piped", LiveOgg, ffmpegPiped(t, in, "ogg", "-c:a", "libopus", "-page_duration", "100000")},
		{"webm file", LiveWebM, file("webm", "-c:a", "libopus")},
		{"webm piped", LiveWebM, ffmpegPiped(t, in, "webm", "-c:a", "libopus", "-cluster_time_limit", "200")},
		{"webm with video", LiveWebM, videoWebM(t, in)},
	} {
		t.Run(c.name, func(t *testing.T) {
			var first []float32
			for _, step := range []int{len(c.data), 4096, 333, 7, 1} {
				got, err := liveDecode(t, c.format, c.data, step)
				if err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				if first == nil {
					first = got
					secs := float64(len(got)) / 16000
					corr, lag := bestCorrelation(want, audio.Float32ToInt16(got), 800)
					t.Logf("%s: %d bytes, %.3f s, correlation %.4f at lag %d", c.name, len(c.data), secs, corr, lag)
					if secs < 1.49 || secs > 1.53 {
						t.Errorf("%.3f s, want 1.5", secs)
					}
					if corr < 0.9 || lag < -2 || lag > 2 {
						t.Errorf("correlation %.4f at lag %d: not the input, lined up", corr, lag)
					}
					continue
				}
				if len(got) != len(first) {
					t.Fatalf("step %d: %d samples, whole file %d", step, len(got), len(first))
				}
				for i := range got {
					if got[i] != first[i] {
						t.Fatalf("step %d: sample %d differs", step, i)
					}
				}
			}
		})
	}
}

// videoWebM is a WebM with a VP8 video track first and the Opus audio second (MediaRecorder
// recording a camera).
func videoWebM(t testing.TB, in []int16) []byte {
	t.Helper()
	dir := t.TempDir()
	src := dir + "/in.wav"
	if err := os.WriteFile(src, append(audio.WAVHeader(24000, 1, 16, len(in)*2), audio.Int16ToBytes(in)...), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ffmpeg", "-v", "error", "-f", "lavfi", "-i", "color=c=blue:s=32x32:r=10:d=1.5", "-i", src,
		"-map", "0:v", "-map", "1:a", "-c:v", "libvpx", "-c:a", "libopus", "-f", "webm", "pipe:1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ffmpeg video webm: %v", err)
	}
	return out
}

// TestLiveDecoderRefuses: the wrong container, another codec inside the right one, a corrupt
// page and a stream cut mid-page are each refused by name.
func TestLiveDecoderRefuses(t *testing.T) {
	needFFmpeg(t)
	in := speechLike(24000)
	ogg := ffmpegPiped(t, in, "ogg", "-c:a", "libopus")
	webm := ffmpegPiped(t, in, "webm", "-c:a", "libopus")
	corrupt := append([]byte(nil), ogg...)
	corrupt[len(corrupt)/2] ^= 0x55
	for _, c := range []struct {
		name, format string
		data         []byte
		want         error
	}{
		{"ogg declared webm", LiveWebM, ogg, ErrUnsupported},
		{"webm declared ogg", LiveOgg, webm, ErrUnsupported},
		{"png", LiveWebM, append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), make([]byte, 64)...), ErrUnsupported},
		{"ogg vorbis", LiveOgg, ffmpegPiped(t, in, "ogg", "-c:a", "libvorbis"), ErrUnsupported},
		{"webm vorbis", LiveWebM, ffmpegPiped(t, in, "webm", "-c:a", "libvorbis"), ErrUnsupported},
		{"ogg corrupt", LiveOgg, corrupt, ErrBroken},
		{"ogg cut mid-page", LiveOgg, ogg[:len(ogg)-10], ErrBroken},
		{"webm cut mid-block", LiveWebM, webm[:len(webm)-3], ErrBroken},
	} {
		if _, err := liveDecode(t, c.format, c.data, 1000); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	if _, err := NewLiveDecoder("mp3", 16000); !errors.Is(err, ErrUnsupported) {
		t.Errorf("mp3 live: %v, want ErrUnsupported", err)
	}
}

// TestLiveDecoderCloseDuringWrite: Close from another goroutine waits for a Write in progress,
// and a Write after it fails ErrClosed (the transcript door closes a transcript a push may be
// decoding for).
func TestLiveDecoderCloseDuringWrite(t *testing.T) {
	d, err := NewLiveDecoder(LiveOgg, 16000)
	if err != nil {
		t.Fatal(err)
	}
	var ogg bytes.Buffer
	enc, _ := NewEncoder(Opus, 24000, &ogg)
	enc.Write(speechLike(24000))
	enc.Close()
	inEmit, release := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	var once sync.Once
	go func() {
		done <- d.Write(ogg.Bytes(), func([]float32) error { once.Do(func() { close(inEmit) }); <-release; return nil })
	}()
	<-inEmit
	closed := make(chan struct{})
	go func() { d.Close(); close(closed) }()
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	<-closed
	if err := d.Write([]byte("OggS"), func([]float32) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Errorf("write after close: %v", err)
	}
}
