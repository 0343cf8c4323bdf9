package speechdoor

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/voiced/voiced/internal/testkit"
)

// ffprobeFile reads a body with ffprobe: container, codec, and the seconds FFmpeg decodes from it.
func ffprobeFile(t *testing.T, body []byte, ext string) (format, codecName string, seconds float64) {
	t.Helper()
	for _, bin := range []string{"ffmpeg", "ffprobe"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s is needed (Debian package ffmpeg, scripts/install-deps.sh): %v", bin, err)
		}
	}
	path := filepath.Join(t.TempDir(), "speech."+ext)
	if err := os.WriteFile(path, body, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("ffprobe", "-v", "error", "-show_entries", "format=format_name:stream=codec_name",
		"-of", "default=noprint_wrappers=1", path).CombinedOutput()
	if err != nil {
		t.Fatalf("ffprobe: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		k, v, _ := strings.Cut(line, "=")
		switch k {
		case "format_name":
			format = v
		case "codec_name":
			codecName = v
		}
	}
	pcm, err := exec.Command("ffmpeg", "-v", "error", "-i", path, "-ac", "1", "-ar", "24000", "-f", "s16le", "-").Output()
	if err != nil {
		t.Fatalf("ffmpeg decode: %v", err)
	}
	return format, codecName, float64(len(pcm)/2) / 24000
}

const formatText = "Hello world. The cat sat on the mat, and then it left."

// pcmSeconds is how long the text is in the pcm format (the reference duration).
func pcmSeconds(t *testing.T, s *speakingServer, speed string) float64 {
	t.Helper()
	resp := postSpeech(t, s, `{"input":"`+formatText+`","response_format":"pcm"`+speed+`}`)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("pcm: %d %s", resp.StatusCode, body)
	}
	return float64(len(body)/2) / 24000
}

// TestSpeechEveryFormat (issue 28): with no response_format the body is mp3 (OpenAI's default);
// every format is what ffprobe says it is and decodes to the text's duration.
func TestSpeechEveryFormat(t *testing.T) {
	testkit.CheckLeaks(t)
	s := newSpeakingServer(t, Config{})
	want := pcmSeconds(t, s, "")
	for _, tc := range []struct {
		field, contentType, ext, format, codec string
		slack                                  float64 // codec delay and padding, seconds
	}{
		{"", "audio/mpeg", "mp3", "mp3", "mp3", 0.12},
		{`,"response_format":"mp3"`, "audio/mpeg", "mp3", "mp3", "mp3", 0.12},
		{`,"response_format":"opus"`, "audio/ogg", "ogg", "ogg", "opus", 0.05},
		{`,"response_format":"aac"`, "audio/aac", "aac", "aac", "aac", 0.12},
		{`,"response_format":"flac"`, "audio/flac", "flac", "flac", "flac", 0.001},
		{`,"response_format":"WAV"`, "audio/wav", "wav", "wav", "pcm_s16le", 0.001},
	} {
		t.Run(tc.ext+tc.field, func(t *testing.T) {
			resp := postSpeech(t, s, `{"model":"tts-1","voice":"alloy","input":"`+formatText+`"`+tc.field+`}`)
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != tc.contentType {
				t.Fatalf("%d %s: %.200s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
			}
			format, codecName, secs := ffprobeFile(t, body, tc.ext)
			t.Logf("%d bytes: ffprobe %s/%s, %.3f s (pcm %.3f s)", len(body), format, codecName, secs, want)
			if !strings.Contains(format, tc.format) || codecName != tc.codec {
				t.Errorf("ffprobe reads %s/%s, want %s/%s", format, codecName, tc.format, tc.codec)
			}
			if secs < want-0.001 || secs > want+tc.slack {
				t.Errorf("decodes to %.3f s, want %.3f (+%.3f)", secs, want, tc.slack)
			}
		})
	}
}

// TestSpeechSSE: stream_format sse is speech.audio.delta events whose audio, joined, is the mp3,
// then one speech.audio.done.
func TestSpeechSSE(t *testing.T) {
	testkit.CheckLeaks(t)
	s := newSpeakingServer(t, Config{})
	want := pcmSeconds(t, s, "")
	resp := postSpeech(t, s, `{"input":"`+formatText+`","stream_format":"sse"}`)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var mp3 bytes.Buffer
	var types []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("not an SSE data line: %q", line)
		}
		var ev struct{ Type, Audio string }
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatal(err)
		}
		types = append(types, ev.Type)
		if ev.Type == "speech.audio.delta" {
			b, err := base64.StdEncoding.DecodeString(ev.Audio)
			if err != nil {
				t.Fatal(err)
			}
			mp3.Write(b)
		}
	}
	if len(types) < 2 || types[len(types)-1] != "speech.audio.done" || types[0] != "speech.audio.delta" {
		t.Fatalf("events %v", types)
	}
	_, codecName, secs := ffprobeFile(t, mp3.Bytes(), "mp3")
	if codecName != "mp3" || secs < want-0.001 || secs > want+0.12 {
		t.Errorf("the deltas are %s of %.3f s, want mp3 of %.3f", codecName, secs, want)
	}
}

// TestSpeechSpeedRange: OpenAI's whole range. Inside Kokoro's 0.5–2.0 the model speaks at the
// speed; past it the audio is time-stretched, so 4.0 is half of 2.0's length and 0.25 twice 0.5's.
func TestSpeechSpeedRange(t *testing.T) {
	s := newSpeakingServer(t, Config{})
	secs := map[float64]float64{}
	for _, sp := range []float64{0.25, 0.5, 2, 4} {
		secs[sp] = pcmSeconds(t, s, `,"speed":`+strconv.FormatFloat(sp, 'g', -1, 64))
	}
	t.Logf("seconds by speed: %v", secs)
	if r := secs[2] / secs[4]; math.Abs(r-2) > 0.01 {
		t.Errorf("speed 4 is %.3f s, speed 2 %.3f s: ratio %.3f, want 2", secs[4], secs[2], r)
	}
	if r := secs[0.25] / secs[0.5]; math.Abs(r-2) > 0.01 {
		t.Errorf("speed 0.25 is %.3f s, speed 0.5 %.3f s: ratio %.3f, want 2", secs[0.25], secs[0.5], r)
	}
	resp := postSpeech(t, s, `{"input":"Hello.","speed":4,"response_format":"pcm"}`)
	if got := resp.Header.Get("X-Voiced-Time-Stretch"); got != "2" {
		t.Errorf("X-Voiced-Time-Stretch %q, want 2", got)
	}
}

// BenchmarkSpeechFirstByte: the time to the first body byte and to the whole body of a
// 30-sentence text in each format (fixture mount), the numbers in LLM.md "audio/codec". That the
// encoders write after the first piece is TestEncoderFirstBytesBeforeClose (audio/codec).
func BenchmarkSpeechFirstByte(b *testing.B) {
	s := newSpeakingServer(b, Config{})
	text := strings.Repeat("This sentence is spoken again and again. ", 30)
	for _, f := range []string{"pcm", "wav", "mp3", "opus", "flac", "aac"} {
		b.Run(f, func(b *testing.B) {
			var first, all time.Duration
			for b.Loop() {
				start := time.Now()
				resp, err := http.Post(s.srv.URL+"/v1/audio/speech", "application/json", strings.NewReader(`{"input":"`+text+`","response_format":"`+f+`"}`))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(resp.Body, make([]byte, 1)); err != nil {
					b.Fatal(err)
				}
				first += time.Since(start)
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				all += time.Since(start)
			}
			b.ReportMetric(float64(first.Microseconds())/1000/float64(b.N), "first-ms")
			b.ReportMetric(float64(all.Microseconds())/1000/float64(b.N), "all-ms")
		})
	}
}
