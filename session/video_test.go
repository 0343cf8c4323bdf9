package session

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/internal/testkit"
)

// (gatedEars, inputbound_test.go, hears "hi" once released: a final decode the test holds.)

// A real 1×1 PNG and a JPEG's head: the server sniffs, it does not render.
var (
	framePNG, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
	frameJPEG   = append([]byte{0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 'J', 'F', 'I', 'F', 0}, bytes.Repeat([]byte{7}, 64)...)
)

func frameEvent(b []byte) map[string]any {
	return map[string]any{"type": "input_video_buffer.append", "image": base64.StdEncoding.EncodeToString(b)}
}

// imageParts are the data URIs of the image parts of a chat request's last message, decoded.
func imageParts(t *testing.T, body map[string]any) [][]byte {
	t.Helper()
	msgs := body["messages"].([]any)
	content, _ := msgs[len(msgs)-1].(map[string]any)["content"].([]any)
	var out [][]byte
	for _, p := range content {
		part := p.(map[string]any)
		if part["type"] != "image_url" {
			continue
		}
		uri := part["image_url"].(map[string]any)["url"].(string)
		_, data, ok := strings.Cut(uri, ";base64,")
		b, err := base64.StdEncoding.DecodeString(data)
		if !ok || err != nil {
			t.Fatalf("image part %q: %v", uri[:min(len(uri), 40)], err)
		}
		out = append(out, b)
	}
	return out
}

// Frames appended before a turn reach the mind with that turn as image parts, bytes equal to
// what was sent, in both dialects; the next turn, with no new frame, carries none of its own,
// and the client's item never shows them.
func TestFramesReachMind(t *testing.T) {
	testkit.CheckLeaks(t)
	for _, beta := range []bool{false, true} {
		s := &standIn{words: []string{"A dot."}}
		ts := newTestServer(t, Config{Engines: Engines{Mind: newStandIn(t, s)}})
		var c *client
		if beta {
			var err error
			c, _, err = ts.dial(t, "/v1/realtime?model=m", &websocket.DialOptions{
				HTTPHeader: http.Header{"Authorization": {"Bearer " + ts.ticket(t)}, "OpenAI-Beta": {"realtime=v1"}}})
			if err != nil {
				t.Fatal(err)
			}
			c.expect("session.created")
		} else {
			c = ts.open(t)
		}
		c.send(frameEvent(framePNG))
		c.send(frameEvent(frameJPEG))
		c.send(userText("What do you see?"))
		itemIn := "conversation.item.done"
		if beta {
			itemIn = "conversation.item.created"
		}
		evs := c.until(itemIn)
		if strings.Contains(typesJoined(evs), "error") {
			t.Fatalf("beta %v: %v", beta, evs)
		}
		c.send(map[string]any{"type": "response.create"})
		got := imageParts(t, s.body(t))
		if len(got) != 2 || !bytes.Equal(got[0], framePNG) || !bytes.Equal(got[1], frameJPEG) {
			t.Fatalf("beta %v: %d image parts, want the two frames sent", beta, len(got))
		}
		c.until("response.done")
		c.send(userText("And now?"))
		c.until(itemIn)
		c.send(map[string]any{"type": "response.create"})
		b := s.body(t)
		if n := len(imageParts(t, b)); n != 0 {
			t.Errorf("beta %v: the next turn carries %d frames", beta, n)
		}
		if !strings.Contains(strings.ToLower(stringOf(b["messages"])), "image_url") {
			t.Errorf("beta %v: the turn that took the frames no longer shows them", beta)
		}
		c.until("response.done")
		c.conn.Close(websocket.StatusNormalClosure, "")
	}
}

// An oversized frame, one that is not an image, and one past the rate are refused by name; the
// conversation goes on, and the frames taken reach the mind.
func TestFrameRefusalsConversationGoesOn(t *testing.T) {
	testkit.CheckLeaks(t)
	s := &standIn{words: []string{"Fine."}}
	ts := newTestServer(t, Config{Senses: SensesConfig{MaxFrameBytes: 80, FrameRate: 1, FramesKept: 2},
		Engines: Engines{Mind: newStandIn(t, s)}})
	c := ts.open(t)
	c.send(frameEvent(bytes.Repeat(framePNG, 2))) // 140 bytes > 80
	if e := c.expectError("video_frame_too_large"); e["param"] != "image" {
		t.Errorf("param %v", e["param"])
	}
	c.send(frameEvent([]byte("GIF89a not a png")))
	c.expectError("video_frame_not_image")
	// The clock stands still: the bucket (2) is spent by the two refusals above and nothing
	// more may pass.
	c.send(frameEvent(framePNG))
	c.expectError("video_frame_rate_exceeded")
	ts.clock.Advance(2e9) // two seconds: two frames' worth
	c.send(frameEvent(framePNG))
	c.send(frameEvent(frameJPEG))
	c.send(frameEvent(framePNG))
	c.expectError("video_frame_rate_exceeded")
	c.send(userText("What now?"))
	c.expect("conversation.item.added", "conversation.item.done")
	c.send(map[string]any{"type": "response.create", "response": map[string]any{"output_modalities": []string{"text"}}})
	got := imageParts(t, s.body(t))
	if len(got) != 2 || !bytes.Equal(got[0], framePNG) || !bytes.Equal(got[1], frameJPEG) {
		t.Errorf("%d image parts, want the two frames taken", len(got))
	}
	evs := c.until("response.done")
	if done := evs[len(evs)-1]["response"].(map[string]any); done["status"] != "completed" {
		t.Errorf("done %v", done["status"])
	}
	c.conn.Close(websocket.StatusNormalClosure, "")
}

// heardAudio decodes the input_audio parts of a chat request's last message.
func heardAudio(t *testing.T, body map[string]any) (samples []float32, rate int, text string) {
	t.Helper()
	msgs := body["messages"].([]any)
	content, _ := msgs[len(msgs)-1].(map[string]any)["content"].([]any)
	for _, p := range content {
		part := p.(map[string]any)
		switch part["type"] {
		case "text":
			text += part["text"].(string)
		case "input_audio":
			ia := part["input_audio"].(map[string]any)
			if ia["format"] != "wav" {
				t.Fatalf("format %v", ia["format"])
			}
			wav, err := base64.StdEncoding.DecodeString(ia["data"].(string))
			if err != nil {
				t.Fatal(err)
			}
			samples, rate, err = audio.DecodeWAVBytes(wav)
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	return samples, rate, text
}

// An omni mind (replace) hears the user's turn as audio whose samples are what the client sent
// (resampled to the mind's rate, within 16-bit rounding and the resampler's edges), and is asked
// before the final decode returns; the client still gets its transcript. beside sends the
// transcript too, after waiting for it.
func TestOmniMindHearsTurn(t *testing.T) {
	testkit.CheckLeaks(t)
	for _, c := range []struct {
		mode MindAudio
		rate int
	}{{MindAudioReplace, 16000}, {MindAudioReplace, 24000}, {MindAudioBeside, 16000}} {
		s := &standIn{words: []string{"I hear you."}}
		gate := make(chan struct{})
		ts := newTestServer(t, Config{Senses: SensesConfig{MindAudio: c.mode, MindAudioRate: c.rate},
			Engines: Engines{Mind: newStandIn(t, s), Ears: gatedEars{release: gate}}})
		cl := ts.open(t)
		cl.send(map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime", "output_modalities": []string{"text"},
			"audio": map[string]any{"input": map[string]any{"turn_detection": nil, "transcription": map[string]any{"model": "whisper-1"}}}}})
		cl.expect("session.updated")
		sent := make([]int16, 24000) // 1 s at 24 kHz: a chirp
		for i := range sent {
			f := 200 + 600*float64(i)/24000
			sent[i] = int16(10000 * math.Sin(2*math.Pi*f*float64(i)/24000))
		}
		raw := audio.Int16ToBytes(sent)
		for off := 0; off < len(raw); off += 960 { // 20 ms appends
			cl.send(appendEvent(raw[off:min(off+960, len(raw))]))
		}
		cl.send(map[string]any{"type": "input_audio_buffer.commit"})
		cl.until("conversation.item.done")
		cl.send(map[string]any{"type": "response.create"})
		var body map[string]any
		if c.mode == MindAudioReplace {
			body = s.body(t) // asked while the decode is held
			close(gate)
		} else {
			close(gate)
			body = s.body(t)
		}
		got, rate, text := heardAudio(t, body)
		want := audio.Resample(audio.Int16ToFloat32(sent), 24000, c.rate)
		if rate != c.rate || len(got) < len(want)-c.rate/100 || len(got) > len(want)+c.rate/100 {
			t.Fatalf("%s/%d: %d samples at %d Hz, want %d at %d", c.mode, c.rate, len(got), rate, len(want), c.rate)
		}
		// Away from the edges (the streamed resampler's warm-up), sample by sample.
		var diff, sig float64
		for i := c.rate / 50; i < min(len(got), len(want))-c.rate/50; i++ {
			d := float64(got[i] - want[i])
			diff += d * d
			sig += float64(want[i]) * float64(want[i])
		}
		if diff > sig*1e-4 { // −40 dB
			t.Errorf("%s/%d: the audio differs from the client's: error %.2g of signal", c.mode, c.rate, diff/sig)
		}
		switch c.mode {
		case MindAudioReplace:
			if text != "" {
				t.Errorf("replace: the mind read %q beside the audio", text)
			}
		case MindAudioBeside:
			if text != "hi" {
				t.Errorf("beside: text %q", text)
			}
		}
		evs := cl.until("response.done")
		if !strings.Contains(typesJoined(evs), "conversation.item.input_audio_transcription.completed") {
			// the transcript may come after response.done when the mind did not wait
			cl.until("conversation.item.input_audio_transcription.completed")
		}
		cl.conn.Close(websocket.StatusNormalClosure, "")
	}
}

// A mind whose server refuses audio fails the response with one named error; the session goes on
// and a text turn is answered.
func TestOmniAudioRefusedNamed(t *testing.T) {
	testkit.CheckLeaks(t)
	s := &standIn{words: []string{"Ok."}, refuseAudio: true}
	ts := newTestServer(t, Config{Senses: SensesConfig{MindAudio: MindAudioReplace},
		Engines: Engines{Mind: newStandIn(t, s), Ears: fakeEars{text: "hi"}}})
	c := ts.open(t)
	c.send(map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime", "output_modalities": []string{"text"},
		"audio": map[string]any{"input": map[string]any{"turn_detection": nil}}}})
	c.expect("session.updated")
	c.send(appendEvent(pcm24(300, true)))
	c.send(map[string]any{"type": "input_audio_buffer.commit"})
	c.until("conversation.item.done")
	c.send(map[string]any{"type": "response.create"})
	s.body(t)
	evs := c.until("response.done")
	var codes []any
	for _, e := range evs {
		if e["type"] == "error" {
			codes = append(codes, e["error"].(map[string]any)["code"])
		}
	}
	if done := evs[len(evs)-1]["response"].(map[string]any); done["status"] != "failed" || len(codes) != 1 || codes[0] != codeAudioRefused {
		t.Fatalf("status %v, error codes %v", done["status"], codes)
	}
	c.send(userText("Can you read this?"))
	c.expect("conversation.item.added", "conversation.item.done")
	c.send(map[string]any{"type": "response.create", "response": map[string]any{"input": []any{userText("Can you read this?")["item"]}}})
	s.body(t)
	evs = c.until("response.done")
	if done := evs[len(evs)-1]["response"].(map[string]any); done["status"] != "completed" {
		t.Errorf("the text turn after: %v", done["status"])
	}
	c.conn.Close(websocket.StatusNormalClosure, "")
}

func typesJoined(evs []map[string]any) string { return strings.Join(types(evs), " ") }

func stringOf(v any) string { return fmt.Sprint(v) }
