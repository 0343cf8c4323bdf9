package codec

import (
	"bytes"
	"errors"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/voiced/voiced/audio"
)

// speechLike is 1.5 s at rate: a tone gliding 300→900 Hz with a slow amplitude envelope, so a
// codec's delay or a dropped frame shows in the correlation.
func speechLike(rate int) []int16 {
	n := rate * 3 / 2
	out := make([]int16, n)
	phase := 0.0
	for i := range out {
		t := float64(i) / float64(rate)
		f := 300 + 400*t
		phase += 2 * math.Pi * f / float64(rate)
		env := 0.5 + 0.4*math.Sin(2*math.Pi*1.3*t)
		out[i] = int16(12000 * env * math.Sin(phase))
	}
	return out
}

func needFFmpeg(t testing.TB) {
	t.Helper()
	for _, bin := range []string{"ffmpeg", "ffprobe"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s is needed (Debian package ffmpeg, scripts/install-deps.sh): %v", bin, err)
		}
	}
}

// probe is ffprobe's reading of a file: format name, codec, rate, duration.
func probe(t *testing.T, path string) (format, codecName string, rate int, seconds float64) {
	t.Helper()
	out, err := exec.Command("ffprobe", "-v", "error", "-show_entries", "format=format_name,duration:stream=codec_name,sample_rate",
		"-of", "default=noprint_wrappers=1", path).CombinedOutput()
	if err != nil {
		t.Fatalf("ffprobe %s: %v\n%s", path, err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		k, v, _ := strings.Cut(line, "=")
		switch k {
		case "format_name":
			format = v
		case "codec_name":
			codecName = v
		case "sample_rate":
			rate, _ = strconv.Atoi(v)
		case "duration":
			seconds, _ = strconv.ParseFloat(v, 64)
		}
	}
	return
}

// ffDecode decodes path with ffmpeg to mono PCM16 at rate.
func ffDecode(t *testing.T, path string, rate int) []int16 {
	t.Helper()
	out, err := exec.Command("ffmpeg", "-v", "error", "-i", path, "-ac", "1", "-ar", strconv.Itoa(rate), "-f", "s16le", "-").Output()
	if err != nil {
		t.Fatalf("ffmpeg decode %s: %v", path, err)
	}
	s, err := audio.BytesToInt16(out[:len(out)&^1])
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// bestCorrelation is the highest normalised correlation of got against want over lags within
// ±maxLag samples, and that lag.
func bestCorrelation(want, got []int16, maxLag int) (float64, int) {
	best, bestLag := -1.0, 0
	for lag := -maxLag; lag <= maxLag; lag++ {
		var xy, xx, yy float64
		for i := range want {
			j := i + lag
			if j < 0 || j >= len(got) {
				continue
			}
			x, y := float64(want[i]), float64(got[j])
			xy += x * y
			xx += x * x
			yy += y * y
		}
		if xx == 0 || yy == 0 {
			continue
		}
		if c := xy / math.Sqrt(xx*yy); c > best {
			best, bestLag = c, lag
		}
	}
	return best, bestLag
}

// TestEncodersReadByFFmpeg: every response format, written in three pieces as sentences arrive,
// is read back by ffprobe as that format at the right duration, and its audio matches the input.
func TestEncodersReadByFFmpeg(t *testing.T) {
	needFFmpeg(t)
	const rate = 24000
	in := speechLike(rate)
	cases := map[string]struct {
		format, codec string
		minCorr       float64
		maxLag        int
	}{
		MP3:  {"mp3", "mp3", 0.95, 1200},
		Opus: {"ogg", "opus", 0.95, 200},
		AAC:  {"aac", "aac", 0.95, 2400},
		FLAC: {"flac", "flac", 0.9999, 0},
		WAV:  {"wav", "pcm_s16le", 0.9999, 0},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			var body bytes.Buffer
			enc, err := NewEncoder(name, rate, &body)
			if err != nil {
				t.Fatal(err)
			}
			for _, piece := range [][]int16{in[:10000], in[10000:10001], in[10001:]} {
				if err := enc.Write(piece); err != nil {
					t.Fatal(err)
				}
			}
			if err := enc.Close(); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "speech."+name)
			if err := os.WriteFile(path, body.Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
			format, codecName, _, secs := probe(t, path)
			if !strings.Contains(format, c.format) || codecName != c.codec {
				t.Fatalf("ffprobe reads %s/%s, want %s/%s", format, codecName, c.format, c.codec)
			}
			got := ffDecode(t, path, rate)
			d := float64(len(got)) / rate
			if math.Abs(d-1.5) > 0.1 {
				t.Errorf("decoded %.3f s (ffprobe says %.3f), want 1.5", d, secs)
			}
			corr, lag := bestCorrelation(in, got, c.maxLag)
			t.Logf("%s: %d bytes, ffprobe %s/%s %.3f s, decoded %.3f s, correlation %.4f at lag %d", name, body.Len(), format, codecName, secs, d, corr, lag)
			if corr < c.minCorr {
				t.Errorf("correlation %.4f < %.4f", corr, c.minCorr)
			}
		})
	}
}

// TestEncoderFirstBytesBeforeClose: each format has bytes out after the first piece, before the
// next is spoken (streamed, not held to the end). AAC's come from ffmpeg a moment later.
func TestEncoderFirstBytesBeforeClose(t *testing.T) {
	in := speechLike(24000)
	for _, name := range []string{MP3, Opus, FLAC, WAV, PCM} {
		var body bytes.Buffer
		enc, err := NewEncoder(name, 24000, &body)
		if err != nil {
			t.Fatal(err)
		}
		if err := enc.Write(in[:12000]); err != nil {
			t.Fatal(err)
		}
		if body.Len() == 0 {
			t.Errorf("%s: nothing written after 0.5 s of audio", name)
		}
		enc.Abort()
	}
}

// encodeWithFFmpeg writes in (24 kHz mono) as ext through ffmpeg with args.
func encodeWithFFmpeg(t *testing.T, in []int16, ext string, args ...string) string {
	t.Helper()
	return encodeWithFFmpegTB(t, in, ext, args...)
}

func encodeWithFFmpegTB(t testing.TB, in []int16, ext string, args ...string) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "in.wav")
	if err := os.WriteFile(src, append(audio.WAVHeader(24000, 1, 16, len(in)*2), audio.Int16ToBytes(in)...), 0o600); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "upload."+ext)
	cmd := exec.Command("ffmpeg", append(append([]string{"-v", "error", "-i", src}, args...), dst)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg encode %s: %v\n%s", ext, err, out)
	}
	return dst
}

func decodeAll(t *testing.T, data []byte, maxSeconds int) ([]float32, int, error) {
	t.Helper()
	kind, ok := Sniff(data[:min(len(data), SniffLen)])
	if !ok {
		return nil, 0, errors.New("not readable: " + kind)
	}
	s, err := Open(bytes.NewReader(data), int64(len(data)), kind, maxSeconds)
	if err != nil {
		return nil, 0, err
	}
	defer s.Close()
	var all []float32
	for {
		b, err := s.Next(s.Rate())
		all = append(all, b...)
		if errors.Is(err, io.EOF) {
			return all, s.Rate(), nil
		}
		if err != nil {
			return all, s.Rate(), err
		}
	}
}

// TestDecodeUploads: files FFmpeg made in every upload format are sniffed by their bytes and
// decoded to the input's audio and length.
func TestDecodeUploads(t *testing.T) {
	needFFmpeg(t)
	in := speechLike(24000)
	cases := []struct {
		ext, kind string
		args      []string
	}{
		{"flac", KindFLAC, nil},
		{"mp3", KindMP3, []string{"-c:a", "libmp3lame", "-b:a", "64k"}},
		{"mp3 8 kHz (MPEG 2.5)", KindMP3, []string{"-c:a", "libmp3lame", "-ar", "8000", "-f", "mp3"}},
		{"m4a", KindMP4, []string{"-c:a", "aac", "-b:a", "64k"}},
		{"ogg", KindOggOpus, []string{"-c:a", "libopus", "-b:a", "48k"}},
		{"oga", KindOggVorbis, []string{"-c:a", "libvorbis", "-f", "ogg"}},
		{"webm", KindWebM, []string{"-c:a", "libopus"}},
		{"aac", KindADTS, []string{"-c:a", "aac", "-f", "adts"}},
	}
	for _, c := range cases {
		t.Run(c.ext, func(t *testing.T) {
			data, err := os.ReadFile(encodeWithFFmpeg(t, in, c.ext, c.args...))
			if err != nil {
				t.Fatal(err)
			}
			if kind, ok := Sniff(data[:SniffLen]); kind != c.kind || !ok {
				t.Fatalf("sniffed %q (%v), want %q", kind, ok, c.kind)
			}
			got, rate, err := decodeAll(t, data, 60)
			if err != nil {
				t.Fatal(err)
			}
			back := audio.Resample(got, rate, 24000)
			d := float64(len(got)) / float64(rate)
			corr, lag := bestCorrelation(in, audio.Float32ToInt16(back), 2400)
			t.Logf("%s: %d bytes, %d Hz, %.3f s, correlation %.4f at lag %d", c.ext, len(data), rate, d, corr, lag)
			if math.Abs(d-1.5) > 0.1 {
				t.Errorf("decoded %.3f s, want 1.5", d)
			}
			if corr < 0.9 {
				t.Errorf("correlation %.4f", corr)
			}
			// The containers that state the encoder's delay (mp3's LAME tag, MP4's edit list,
			// Ogg Opus's pre-skip) line up with the input; ADTS states none, and its one frame of
			// AAC-LC priming (FFmpeg's whole) is dropped.
			if c.kind != KindOggVorbis && (lag < -2 || lag > 2) {
				t.Errorf("decoded audio is %d samples late", lag)
			}
		})
	}
}

// TestDecodeRefusesBrokenUploads: a truncated mp3, flac, Ogg and m4a fail with ErrBroken; a PNG
// and random bytes are not readable.
func TestDecodeRefusesBrokenUploads(t *testing.T) {
	needFFmpeg(t)
	in := speechLike(24000)
	for _, c := range []struct {
		ext  string
		args []string
	}{
		{"mp3", []string{"-c:a", "libmp3lame"}}, {"flac", nil}, {"ogg", []string{"-c:a", "libopus"}},
		{"oga", []string{"-c:a", "libvorbis", "-f", "ogg"}}, {"m4a", []string{"-c:a", "aac"}}, {"webm", []string{"-c:a", "libopus"}},
	} {
		data, err := os.ReadFile(encodeWithFFmpeg(t, in, c.ext, c.args...))
		if err != nil {
			t.Fatal(err)
		}
		cut := data[:len(data)/2+1]
		if _, _, err := decodeAll(t, cut, 60); !errors.Is(err, ErrBroken) {
			t.Errorf("%s truncated to %d of %d bytes: %v, want ErrBroken", c.ext, len(cut), len(data), err)
		}
	}
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	if kind, ok := Sniff(png); ok || kind != "PNG image" {
		t.Errorf("PNG sniffed as %q %v", kind, ok)
	}
	random := make([]byte, 4096)
	for i := range random {
		random[i] = byte(i*7919 + i*i*31)
	}
	if kind, ok := Sniff(random); ok {
		t.Errorf("random bytes sniffed as %q", kind)
	}
}

// TestMP3StreamedLength: the mp3 voiced streams carries no gapless tag (its first frame is sent
// before the length is known, and FFmpeg trims the end only with a frame count in the tag), so a
// decoder reads, before the audio, LAME's encoder delay (576) and the layer III decoder's delay
// (529), and after it what pads the last frame out (< 576 samples at 24 kHz, MPEG-2): the
// decoded length is the input's + [1105, 1681) samples, for any length, and ffprobe's duration
// is that decoded length. The stated bound is what tests of the speech doors allow.
func TestMP3StreamedLength(t *testing.T) {
	needFFmpeg(t)
	in := speechLike(24000)
	for _, n := range []int{24000, 24001, 24575, 36000} {
		var body bytes.Buffer
		enc, err := NewEncoder(MP3, 24000, &body)
		if err != nil {
			t.Fatal(err)
		}
		enc.Write(in[:n/2])
		enc.Write(in[n/2 : n])
		if err := enc.Close(); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "speech.mp3")
		if err := os.WriteFile(path, body.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		_, _, _, secs := probe(t, path)
		got := len(ffDecode(t, path, 24000))
		extra := got - n
		t.Logf("%d samples: decoded %d (+%d), ffprobe %.4f s", n, got, extra, secs)
		if extra < MP3StreamExtraMin || extra >= MP3StreamExtraMax {
			t.Errorf("%d samples decode to %d: %d extra, want [%d, %d)", n, got, extra, MP3StreamExtraMin, MP3StreamExtraMax)
		}
		if math.Abs(secs-float64(got)/24000) > 0.0005 {
			t.Errorf("ffprobe %.4f s, decoded %.4f s", secs, float64(got)/24000)
		}
	}
}
