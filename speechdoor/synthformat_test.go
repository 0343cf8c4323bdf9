package speechdoor

import (
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/voiced/voiced/audio/codec"
	"github.com/voiced/voiced/internal/testkit"
	"github.com/voiced/voiced/speechcore/kokoro"
)

// TestSynthesizeDoorFormats (issue 28): with ?format=mp3|opus|flac|wav each utterance's binary
// frames joined are one file FFmpeg reads as that format, at the duration the headers state (mp3:
// less than codec.MP3StreamExtraMax samples more, LAME's priming, the decoder's delay and the
// last frame's padding); two utterances are two files; every piece's samples are metered, not
// its bytes.
func TestSynthesizeDoorFormats(t *testing.T) {
	testkit.CheckLeaks(t)
	for _, c := range []struct {
		format, ext, codec string
		slack              float64 // seconds FFmpeg may read past the stated duration
	}{
		{"mp3", "mp3", "mp3", float64(codec.MP3StreamExtraMax) / 24000}, {"opus", "ogg", "opus", 0.001}, {"flac", "flac", "flac", 0.001}, {"wav", "wav", "pcm_s16le", 0.001},
	} {
		t.Run(c.format, func(t *testing.T) {
			rec := newUsageRecorder()
			s := newSpeakingServer(t, Config{Usage: rec})
			ws := dial(t, s.wsURL("/v1/synthesize?format="+c.format), nil)
			if ready := ws.expect("ready"); ready["encoding"] != c.format {
				t.Errorf("ready %v", ready)
			}
			samples := 0
			for u, text := range []string{"Hello world. The cat sat!", "Read the test."} {
				ws.text(text)
				var file []byte
				var ms float64
				for {
					m, _ := ws.next()
					if m == nil {
						t.Fatalf("a binary frame without its header")
					}
					if m["type"] == "utteranceComplete" {
						if m["utterance"] != float64(u) {
							t.Fatalf("utteranceComplete %v", m)
						}
						break
					}
					if m["type"] != "audio" && m["type"] != "audioEnd" {
						t.Fatalf("frame %v", m)
					}
					if m["type"] == "audio" {
						ms += m["durationMs"].(float64)
						samples += int(m["samples"].(float64))
					}
					file = append(file, ws.binary()...)
				}
				format, codecName, secs := ffprobeFile(t, file, c.ext)
				t.Logf("utterance %d: %d bytes, ffprobe %s/%s %.3f s, headers %.3f s", u, len(file), format, codecName, secs, ms/1000)
				if codecName != c.codec || secs < ms/1000-0.001 || secs > ms/1000+c.slack {
					t.Errorf("utterance %d: %s/%s %.3f s, want %s of %.3f s", u, format, codecName, secs, c.codec, ms/1000)
				}
			}
			ws.conn.Close(websocket.StatusNormalClosure, "")
			_, spoken, _ := rec.totals(t, UsageDoorSynthesize)
			if want := float64(samples) / kokoro.SampleRate; !sameSeconds(spoken, want) {
				t.Errorf("metered %g s, want %g s (%d samples)", spoken, want, samples)
			}
			rec.checkDurable(t)
		})
	}
}

// TestSynthesizeDoorFormatRefused: aac and unknown formats are refused by name before the upgrade.
func TestSynthesizeDoorFormatRefused(t *testing.T) {
	s := newSpeakingServer(t, Config{})
	for _, f := range []string{"aac", "ogg", "bogus"} {
		resp, err := http.Get(s.srv.URL + "/v1/synthesize?format=" + f)
		if err != nil {
			t.Fatal(err)
		}
		var body strings.Builder
		buf := make([]byte, 512)
		n, _ := resp.Body.Read(buf)
		body.Write(buf[:n])
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body.String(), "unsupported_response_format") {
			t.Errorf("format=%s: %d %s", f, resp.StatusCode, body.String())
		}
	}
}
