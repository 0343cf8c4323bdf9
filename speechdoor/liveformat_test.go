package speechdoor

import (
	"bytes"
	"net/http"
	"os/exec"
	"strconv"
	"testing"

	"github.com/coder/websocket"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/internal/testkit"
)

// mediaRecorder encodes pcm (16 kHz) with FFmpeg's libopus into format (webm or ogg), written
// to a pipe as a browser's MediaRecorder streams it (a WebM's Segment and Clusters of unknown
// size).
func mediaRecorder(t testing.TB, pcm []float32, format string) []byte {
	t.Helper()
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Fatalf("ffmpeg is needed (Debian package ffmpeg, scripts/install-deps.sh): %v", err)
	}
	cmd := exec.Command("ffmpeg", "-v", "error", "-f", "s16le", "-ar", strconv.Itoa(audio.WhisperSampleRate), "-ac", "1", "-i", "pipe:0",
		"-c:a", "libopus", "-b:a", "64k", "-f", format, "pipe:1")
	cmd.Stdin = bytes.NewReader(audio.Float32ToPCM16(pcm))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ffmpeg %s: %v", format, err)
	}
	return out
}

// ffmpegPCM16k is FFmpeg's own decoding of a file to 16 kHz mono (an independent reader).
func ffmpegPCM16k(t testing.TB, data []byte) []float32 {
	t.Helper()
	cmd := exec.Command("ffmpeg", "-v", "error", "-i", "pipe:0", "-ac", "1", "-ar", "16000", "-f", "s16le", "pipe:1")
	cmd.Stdin = bytes.NewReader(data)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ffmpeg decode: %v", err)
	}
	pcm, err := audio.PCM16ToFloat32(out[:len(out)&^1])
	if err != nil {
		t.Fatal(err)
	}
	return pcm
}

// TestTranscribeDoorLiveFormats (issue 28): the fixture sentence recorded as WebM and Ogg Opus,
// sent in 1000-byte frames cut anywhere (as MediaRecorder's timeslices arrive), transcribes to the
// sentence's phonemes; the ready frame names the format.
func TestTranscribeDoorLiveFormats(t *testing.T) {
	testkit.CheckLeaks(t)
	h := newHearingServer(t, Config{})
	pcm, phonemes := codecSpeech(t, sttSentence)
	for _, format := range []string{"webm", "ogg"} {
		data := mediaRecorder(t, pcm, format)
		c := dialSTT(t, h.wsURL("/v1/transcribe?format="+format))
		if ready := c.next(); ready["encoding"] != format+"/opus" || ready["sampleRate"] != 16000.0 {
			t.Errorf("%s: ready %v", format, ready)
		}
		for at := 0; at < len(data); at += 1000 {
			c.send(websocket.MessageBinary, data[at:min(at+1000, len(data))])
		}
		c.send(websocket.MessageText, []byte(`{"type":"end"}`))
		final, _ := c.until("delta", "final")
		if final["text"] != phonemes {
			t.Errorf("%s: final %q, want %q", format, final["text"], phonemes)
		}
		c.conn.Close(websocket.StatusNormalClosure, "")
	}
}

// TestTranscribeDoorLiveRefusals: a format the door cannot read as it arrives is refused by name
// before the upgrade; bytes that are not the declared container are refused by name on the
// socket, which is then closed.
func TestTranscribeDoorLiveRefusals(t *testing.T) {
	testkit.CheckLeaks(t)
	h := newHearingServer(t, Config{})
	for _, f := range []string{"mp3", "flac", "wav", "bogus"} {
		resp, err := http.Get(h.srv.URL + "/v1/transcribe?format=" + f)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnsupportedMediaType {
			t.Errorf("format=%s: %d, want 415", f, resp.StatusCode)
		}
	}
	pcm, _ := codecSpeech(t, sttSentence)
	c := dialSTT(t, h.wsURL("/v1/transcribe?format=webm"))
	c.next()
	c.send(websocket.MessageBinary, mediaRecorder(t, pcm[:16000], "ogg"))
	if e := c.next(); e["type"] != "error" || e["name"] != "unsupported_audio_format" {
		t.Errorf("ogg sent as webm: %v", e)
	}
	if code, reason := c.closeStatus(); code != websocket.StatusUnsupportedData || reason != "unsupported_audio_format" {
		t.Errorf("closed %d %q", code, reason)
	}
}

// TestTranscriptLiveFormat (issue 28): real speech recorded as WebM Opus, pushed to the
// half-duplex transcript in 4000-byte pieces cut anywhere, is answered, billed and transcribed as
// the same speech decoded by FFmpeg and pushed as raw PCM is; a format it cannot read is
// refused at the open, and a push that is not WebM is refused by name.
func TestTranscriptLiveFormat(t *testing.T) {
	testkit.CheckLeaks(t)
	h := newHearingServer(t, Config{})
	c := transcriptClient{t: t, url: h.srv.URL}
	webm := mediaRecorder(t, realSpeech(t), "webm")

	push := func(id string, chunks [][]byte) (billed float64) {
		for i, b := range chunks {
			status, ack := c.do("POST", "/v1/audio/transcript/"+id, b)
			if status != 200 {
				t.Fatalf("push %d: %d %v", i, status, ack)
			}
			billed += ack["duration"].(float64)
		}
		return billed
	}
	// The squelch's admissions depend on where pushes cut the audio: the reference is the same
	// speech in one push each way, then the WebM again in 4000-byte pieces cut anywhere.
	run := func(format string, chunks [][]byte) (string, float64) {
		status, m := c.do("POST", "/v1/audio/transcript?format="+format, nil)
		id, _ := m["id"].(string)
		if status != http.StatusCreated || id == "" {
			t.Fatalf("open %s: %d %v", format, status, m)
		}
		billed := push(id, chunks)
		status, done := c.do("DELETE", "/v1/audio/transcript/"+id, nil)
		if status != 200 {
			t.Fatalf("close: %d %v", status, done)
		}
		text, _ := done["text"].(string)
		return text, billed
	}
	text, billed := run("webm", [][]byte{webm})
	refText, refBilled := run("pcm16", [][]byte{audio.Float32ToPCM16(ffmpegPCM16k(t, webm))})
	var pieces [][]byte
	for at := 0; at < len(webm); at += 4000 {
		pieces = append(pieces, webm[at:min(at+4000, len(webm))])
	}
	piecesText, piecesBilled := run("webm", pieces)
	t.Logf("webm: %q billed %.3f s; FFmpeg's PCM: %q billed %.3f s; webm in %d pieces: %q billed %.3f s",
		text, billed, refText, refBilled, len(pieces), piecesText, piecesBilled)
	if refText == "" || text != refText {
		t.Errorf("webm transcript %q, FFmpeg-decoded PCM's %q", text, refText)
	}
	if billed <= 0 || billed < refBilled-0.05 || billed > refBilled+0.05 {
		t.Errorf("billed %.3f s, the PCM %.3f s", billed, refBilled)
	}
	if piecesText == "" || piecesBilled <= 0 {
		t.Errorf("webm in pieces: %q billed %.3f s", piecesText, piecesBilled)
	}

	if status, e := c.do("POST", "/v1/audio/transcript?format=mp3", nil); status != http.StatusUnsupportedMediaType || e["name"] != "unsupported_audio_format" {
		t.Errorf("open format=mp3: %d %v", status, e)
	}
	status, m := c.do("POST", "/v1/audio/transcript?format=webm", nil)
	id, _ := m["id"].(string)
	if status != http.StatusCreated {
		t.Fatalf("open: %d %v", status, m)
	}
	if status, e := c.do("POST", "/v1/audio/transcript/"+id, append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 100)...)); status != http.StatusUnsupportedMediaType || e["name"] != "unsupported_audio_format" {
		t.Errorf("a PNG pushed: %d %v", status, e)
	}
	c.do("DELETE", "/v1/audio/transcript/"+id, nil)
}
