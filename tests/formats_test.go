package tests

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/audio/codec"
)

// ffprobeAudio is FFmpeg's reading of an audio file: container, codec, and the seconds FFmpeg
// decodes from it (at 24 kHz).
func ffprobeAudio(t *testing.T, path string) (format, codec string, seconds float64) {
	t.Helper()
	for _, bin := range []string{"ffmpeg", "ffprobe"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s is needed (Debian package ffmpeg, scripts/install-deps.sh): %v", bin, err)
		}
	}
	out, err := exec.Command("ffprobe", "-v", "error", "-show_entries", "format=format_name:stream=codec_name",
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
			codec = v
		}
	}
	pcm, err := exec.Command("ffmpeg", "-v", "error", "-i", path, "-ac", "1", "-ar", "24000", "-f", "s16le", "-").Output()
	if err != nil {
		t.Fatalf("ffmpeg decode %s: %v", path, err)
	}
	return format, codec, float64(len(pcm)/2) / 24000
}

// TestNodeOpenAIFormats (issue 28): the official openai npm package gets an mp3 when it names no
// response_format, and opus, aac, flac, wav, pcm when it does, each read back by FFmpeg at the
// speech's duration; stream_format "sse" parses with the SDK's own SSE reader into an mp3. The
// fixture's speech encoded by FFmpeg into flac, mp3, m4a, ogg and webm, sent through
// audio.transcriptions.create as "upload.bin", transcribes to what the WAV does; a PNG, random
// bytes and a truncated mp3 are refused by name, nothing billed.
func TestNodeOpenAIFormats(t *testing.T) {
	checkLeaks(t)
	s := startServer(t, serverOpts{})
	want := expectedPhonemes(t, roundTripSentence)
	body, _ := json.Marshal(map[string]any{"input": roundTripSentence, "voice": "alloy", "response_format": "wav"})
	code, wav := s.do("POST", "/v1/audio/speech", "application/json", bytes.NewReader(body))
	if code != http.StatusOK {
		t.Fatalf("speech: %d %s", code, wav)
	}
	pcm, _, err := audio.DecodeWAVBytes(wav)
	if err != nil {
		t.Fatal(err)
	}
	seconds := float64(len(pcm)) / 24000

	dir := t.TempDir()
	wavPath := filepath.Join(dir, "speech.wav")
	if err := os.WriteFile(wavPath, wav, 0o600); err != nil {
		t.Fatal(err)
	}
	uploads := map[string]string{}
	for name, args := range map[string][]string{
		"flac": nil, "mp3": {"-c:a", "libmp3lame", "-b:a", "96k"}, "m4a": {"-c:a", "aac", "-b:a", "96k"},
		"ogg": {"-c:a", "libopus", "-b:a", "64k"}, "webm": {"-c:a", "libopus", "-b:a", "64k"},
		"aac": {"-c:a", "aac", "-b:a", "96k", "-f", "adts"},
	} {
		dst := filepath.Join(dir, "upload."+name)
		if out, err := exec.Command("ffmpeg", append(append([]string{"-v", "error", "-i", wavPath}, args...), dst)...).CombinedOutput(); err != nil {
			t.Fatalf("ffmpeg %s: %v\n%s", name, err, out)
		}
		uploads[name] = dst
	}
	mp3, err := os.ReadFile(uploads["mp3"])
	if err != nil {
		t.Fatal(err)
	}
	random := make([]byte, 32<<10)
	for i := range random {
		random[i] = byte(i*7919 + i*i*31 + i>>7)
	}
	for name, b := range map[string][]byte{
		"truncated.mp3": mp3[:len(mp3)*2/3],
		"image.png":     append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), make([]byte, 100)...),
		"random.bin":    random,
	} {
		uploads[name] = filepath.Join(dir, name)
		if err := os.WriteFile(uploads[name], b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	const heardSeries = `voiced_heard_seconds_total{door="transcribe"}`
	heardBefore := s.metricsOf(t)[heardSeries]

	args := []string{dir, roundTripSentence}
	for _, p := range uploads {
		args = append(args, p)
	}
	lines := nodeScript(t, "formats.mjs", []string{"VOICED_BASE_URL=" + s.Base + "/v1", "VOICED_API_KEY=" + s.Token}, args...)
	var r struct {
		Speech map[string]struct{ File, ContentType string }
		SSE    struct {
			Events []string
			Deltas int
			File   string
		}
		Uploads map[string]struct {
			Text   string
			Status int
			Code   string
		}
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
		t.Fatalf("node output %q: %v", lines, err)
	}
	for name, w := range map[string]struct{ contentType, format, codec string }{
		"default": {"audio/mpeg", "mp3", "mp3"}, "mp3": {"audio/mpeg", "mp3", "mp3"},
		"opus": {"audio/ogg", "ogg", "opus"}, "aac": {"audio/aac", "aac", "aac"},
		"flac": {"audio/flac", "flac", "flac"}, "wav": {"audio/wav", "wav", "pcm_s16le"},
	} {
		got := r.Speech[name]
		format, codecName, secs := ffprobeAudio(t, got.File)
		t.Logf("speech %s: %s, ffprobe %s/%s, %.3f s (the WAV %.3f s)", name, got.ContentType, format, codecName, secs, seconds)
		if got.ContentType != w.contentType || !strings.Contains(format, w.format) || codecName != w.codec {
			t.Errorf("speech %s: %s read as %s/%s, want %s %s/%s", name, got.ContentType, format, codecName, w.contentType, w.format, w.codec)
		}
		lo, hi := seconds-0.001, seconds+0.001
		switch name {
		case "default", "mp3": // no gapless tag on a streamed mp3: LAME's priming, the decoder's delay, the last frame's padding
			lo, hi = seconds+float64(codec.MP3StreamExtraMin)/24000-0.001, seconds+float64(codec.MP3StreamExtraMax)/24000
		case "aac": // ADTS states no priming: FFmpeg's encoder's 1024 samples and the last frame's padding
			hi = seconds + 2048.0/24000
		}
		if secs < lo || secs > hi {
			t.Errorf("speech %s: %.3f s, want %.3f to %.3f", name, secs, lo, hi)
		}
	}
	if raw, err := os.ReadFile(r.Speech["pcm"].File); err != nil || len(raw) != len(pcm)*2 {
		t.Errorf("pcm: %d bytes (%v), want %d", len(raw), err, len(pcm)*2)
	}
	if strings.Join(r.SSE.Events, ",") != "speech.audio.delta,speech.audio.done" || r.SSE.Deltas == 0 {
		t.Errorf("sse events %v, %d deltas", r.SSE.Events, r.SSE.Deltas)
	}
	if _, codecName, secs := ffprobeAudio(t, r.SSE.File); codecName != "mp3" || secs < seconds || secs > seconds+float64(codec.MP3StreamExtraMax)/24000 {
		t.Errorf("sse deltas joined: %s of %.3f s, want mp3 of %.3f", codecName, secs, seconds)
	}

	for _, name := range []string{"flac", "mp3", "m4a", "ogg", "webm", "aac"} {
		got := r.Uploads[uploads[name]]
		if got.Text != want {
			t.Errorf("upload %s: %+v, want the WAV's %q", name, got, want)
		}
	}
	for name, w := range map[string]struct {
		status int
		code   string
	}{
		"truncated.mp3": {400, "invalid_audio"}, "image.png": {415, "unsupported_audio_format"}, "random.bin": {415, "unsupported_audio_format"},
	} {
		if got := r.Uploads[uploads[name]]; got.Status != w.status || got.Code != w.code {
			t.Errorf("upload %s: %+v, want %d %s", name, got, w.status, w.code)
		}
	}
	heard := s.metricsOf(t)[heardSeries] - heardBefore
	if perUpload := seconds * 6; heard < perUpload-0.5 || heard > perUpload+0.5 {
		t.Errorf("heard %.2f s for 6 uploads of %.2f s and 3 refused, want %.2f", heard, seconds, perUpload)
	}
}
