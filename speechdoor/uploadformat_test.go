package speechdoor

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/speechcore/fixture"
)

// ffmpegEncode writes pcm (24 kHz mono) as a file made by FFmpeg with args, and returns its bytes.
func ffmpegEncode(t *testing.T, pcm []float32, ext string, args ...string) []byte {
	t.Helper()
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Fatalf("ffmpeg is needed (Debian package ffmpeg, scripts/install-deps.sh): %v", err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "in.wav")
	if err := os.WriteFile(src, wavBytes(pcm, 24000, 1), 0o600); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "out."+ext)
	if out, err := exec.Command("ffmpeg", append(append([]string{"-v", "error", "-i", src}, args...), dst)...).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg %s: %v\n%s", ext, err, out)
	}
	b, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// uploadFormats are the files of the round trip: what FFmpeg writes for each upload format
// OpenAI accepts (Ogg in both of its codecs).
var uploadFormats = []struct {
	name, ext string
	args      []string
}{
	{"flac", "flac", nil},
	{"mp3", "mp3", []string{"-c:a", "libmp3lame", "-b:a", "96k"}},
	{"m4a", "m4a", []string{"-c:a", "aac", "-b:a", "96k"}},
	{"mp4", "mp4", []string{"-c:a", "aac", "-b:a", "96k"}},
	{"ogg opus", "ogg", []string{"-c:a", "libopus", "-b:a", "64k"}},
	{"ogg vorbis", "oga", []string{"-c:a", "libvorbis", "-q:a", "6", "-f", "ogg"}},
	{"webm opus", "webm", []string{"-c:a", "libopus", "-b:a", "64k"}},
}

// ADTS (raw .aac) is read too (audio/codec's TestDecodeUploads) but left out of the round trip:
// it does not state the encoder's priming (1024 samples from FFmpeg's encoder, 2112 from
// Apple's), so its audio starts 43 ms late, which real Whisper does not mind and the fixture
// codec (phonemes on an 80 ms grid) reads as a trailing ".".

// TestTranscriptionsEveryUploadFormat (issue 28): the fixture's speech encoded by FFmpeg into
// each format, sent under a misleading name and type (audio.wav, application/octet-stream), is
// recognised by its bytes and transcribed to what the WAV is.
func TestTranscriptionsEveryUploadFormat(t *testing.T) {
	h := newHearingServer(t, Config{})
	_, phonemes := codecSpeech(t, sttSentence)
	pcm24k := fixture.Waveform(fixture.PhonemeIDs(sttSentence), 1)
	_, wavBody := postTranscription(t, h, wavBytes(pcm24k, 24000, 1), nil)
	var want struct{ Text string }
	if err := json.Unmarshal(wavBody, &want); err != nil || want.Text != phonemes {
		t.Fatalf("the WAV itself: %s (%v), want %q", wavBody, err, phonemes)
	}
	for _, f := range uploadFormats {
		t.Run(f.name, func(t *testing.T) {
			file := ffmpegEncode(t, pcm24k, f.ext, f.args...)
			resp, body := postTranscription(t, h, file, map[string]string{"response_format": "json"})
			var got struct{ Text string }
			if resp.StatusCode != 200 || json.Unmarshal(body, &got) != nil {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			if got.Text != want.Text {
				t.Errorf("%s (%d bytes) transcribed %q, the WAV %q", f.name, len(file), got.Text, want.Text)
			}
		})
	}
}

// TestTranscriptionsRefuseWhatIsNotAudio (issue 28): a PNG, random bytes, a truncated mp3 (and
// m4a, flac) are refused by name, with nothing billed.
func TestTranscriptionsRefuseWhatIsNotAudio(t *testing.T) {
	usage := newUsageRecorder()
	h := newHearingServer(t, Config{})
	h.svc.SetUsage(usage)
	pcm24k := fixture.Waveform(fixture.PhonemeIDs(sttSentence), 1)
	mp3 := ffmpegEncode(t, pcm24k, "mp3", "-c:a", "libmp3lame")
	m4a := ffmpegEncode(t, pcm24k, "m4a", "-c:a", "aac")
	flac := ffmpegEncode(t, pcm24k, "flac")
	random := make([]byte, 64<<10)
	for i := range random {
		random[i] = byte(i*7919 + i*i*31 + i>>7)
	}
	png := append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10"), make([]byte, 200)...)
	for name, tc := range map[string]struct {
		file   []byte
		status int
		code   string
	}{
		"png":                   {png, 415, "unsupported_audio_format"},
		"random bytes":          {random, 415, "unsupported_audio_format"},
		"truncated mp3":         {mp3[:len(mp3)*2/3], 400, "invalid_audio"},
		"truncated m4a":         {m4a[:len(m4a)*2/3], 400, "invalid_audio"},
		"truncated flac":        {flac[:len(flac)*2/3], 400, "invalid_audio"},
		"mp3 frames, then junk": {append(append([]byte(nil), mp3...), random[:4096]...), 400, "invalid_audio"},
	} {
		t.Run(name, func(t *testing.T) {
			resp, body := postTranscription(t, h, tc.file, nil)
			var e struct{ Error door.OpenAIError }
			if err := json.Unmarshal(body, &e); err != nil {
				t.Fatalf("%s: not OpenAI's error shape: %v", body, err)
			}
			if resp.StatusCode != tc.status || e.Error.Code != tc.code {
				t.Fatalf("%d %s, want %d %s", resp.StatusCode, body, tc.status, tc.code)
			}
			t.Logf("%s", e.Error.Message)
		})
	}
	usage.mu.Lock()
	defer usage.mu.Unlock()
	if len(usage.calls) != 0 {
		t.Errorf("refused uploads were billed: %+v", usage.calls)
	}
}

// TestDecodedUploadTooLong: a compressed upload holding more than the bound (MaxUploadSeconds;
// 60 s here, to keep the test short) is refused (audio_too_long) from what it decodes to, not
// from its size: 61 s of 8 kbit/s mp3 is 61 KB.
func TestDecodedUploadTooLong(t *testing.T) {
	for _, f := range []struct{ ext, codec string }{{"mp3", "libmp3lame"}, {"m4a", "aac"}} {
		file := ffmpegEncode(t, make([]float32, 100), f.ext, "-af", "apad=whole_dur=61", "-ar", "16000", "-c:a", f.codec, "-b:a", "8k")
		_, _, refusal := decodedUpload(bytes.NewReader(file), int64(len(file)), map[string]string{"mp3": "mp3", "m4a": "mp4"}[f.ext], 60)
		if refusal == nil || refusal.Name() != "audio_too_long" {
			t.Errorf("%s, %d bytes of 61 s: %v, want audio_too_long", f.ext, len(file), refusal)
		}
		src, closeSrc, refusal := decodedUpload(bytes.NewReader(file), int64(len(file)), map[string]string{"mp3": "mp3", "m4a": "mp4"}[f.ext], 62)
		if refusal != nil {
			t.Fatalf("%s under a 62 s bound: %v", f.ext, refusal)
		}
		windows := readWindows(t, src)
		closeSrc()
		if len(windows) != 3 {
			t.Errorf("%s: %d windows of 61 s, want 3", f.ext, len(windows))
		}
	}
}
