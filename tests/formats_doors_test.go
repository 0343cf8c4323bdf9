package tests

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voiced/voiced/audio"
)

// synthesizeFormatWS speaks text through WS /v1/synthesize?format= and returns the utterance's
// binary frames joined (one file) and the samples its headers state.
func synthesizeFormatWS(t testing.TB, s *server, format, text string) (file []byte, samples int) {
	t.Helper()
	conn := s.dialWS(t, "/v1/synthesize?format="+format)
	if ready := readJSON(t, conn, 30*time.Second); ready["encoding"] != format {
		t.Fatalf("ready %v, want encoding %s", ready, format)
	}
	if err := conn.Write(ctxT(t, 10*time.Second), websocket.MessageText, []byte(text)); err != nil {
		t.Fatal(err)
	}
	for {
		typ, data, err := conn.Read(ctxT(t, 60*time.Second))
		if err != nil {
			t.Fatalf("synthesize read: %v", err)
		}
		if typ == websocket.MessageBinary {
			file = append(file, data...)
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("synthesize: %v: %s", err, data)
		}
		switch m["type"] {
		case "audio":
			samples += int(m["samples"].(float64))
		case "utteranceComplete":
			conn.Close(websocket.StatusNormalClosure, "")
			return file, samples
		case "error":
			t.Fatalf("synthesize error frame: %v", m)
		}
	}
}

// ffmpegPipe runs ffmpeg with in on stdin and returns its stdout.
func ffmpegPipe(t testing.TB, in []byte, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("ffmpeg", append([]string{"-v", "error"}, args...)...)
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ffmpeg %v: %v", args, err)
	}
	return out
}

// TestRawDoorFormats (issue 28), through the built server: WS /v1/synthesize?format=flac gives
// a FLAC file FFmpeg decodes to exactly the PCM the door speaks by default; the sentence's speech
// recorded by FFmpeg as MediaRecorder streams it (WebM and Ogg Opus, piped) and sent to WS
// /v1/transcribe?format= in 1000-byte frames cut anywhere transcribes to the sentence's phonemes.
func TestRawDoorFormats(t *testing.T) {
	checkLeaks(t)
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Fatalf("ffmpeg is needed (Debian package ffmpeg, scripts/install-deps.sh): %v", err)
	}
	s := startServer(t, serverOpts{})
	want := expectedPhonemes(t, roundTripSentence)

	pcm24 := synthesizeWS(t, s, roundTripSentence)
	flac, samples := synthesizeFormatWS(t, s, "flac", roundTripSentence)
	decoded, err := audio.BytesToInt16(ffmpegPipe(t, flac, "-i", "pipe:0", "-f", "s16le", "pipe:1"))
	if err != nil {
		t.Fatal(err)
	}
	if samples != len(pcm24) || len(decoded) != len(pcm24) || !bytes.Equal(audio.Int16ToBytes(decoded), audio.Int16ToBytes(pcm24)) {
		t.Fatalf("flac: %d samples stated, %d decoded, the PCM door's %d (or they differ)", samples, len(decoded), len(pcm24))
	}

	wav := append(audio.WAVHeader(24000, 1, 16, len(pcm24)*2), audio.Int16ToBytes(pcm24)...)
	for _, format := range []string{"webm", "ogg"} {
		rec := ffmpegPipe(t, wav, "-i", "pipe:0", "-c:a", "libopus", "-b:a", "64k", "-f", format, "pipe:1")
		conn := s.dialWS(t, "/v1/transcribe?format="+format)
		if ready := readJSON(t, conn, 30*time.Second); ready["encoding"] != format+"/opus" {
			t.Fatalf("ready %v", ready)
		}
		for at := 0; at < len(rec); at += 1000 {
			if err := conn.Write(ctxT(t, 10*time.Second), websocket.MessageBinary, rec[at:min(at+1000, len(rec))]); err != nil {
				t.Fatal(err)
			}
		}
		if err := conn.Write(ctxT(t, 10*time.Second), websocket.MessageText, []byte(`{"type":"end"}`)); err != nil {
			t.Fatal(err)
		}
		for got := ""; ; {
			m := readJSON(t, conn, 60*time.Second)
			if m["type"] == "error" {
				t.Fatalf("%s: %v", format, m)
			}
			if m["type"] == "delta" && m["kind"] == "final" {
				got, _ = m["text"].(string)
				if strings.TrimSpace(got) != want {
					t.Errorf("%s: %q, want %q", format, got, want)
				}
				break
			}
		}
		conn.Close(websocket.StatusNormalClosure, "")
	}
	s.stop()
}
