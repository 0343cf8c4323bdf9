package speechdoor

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/internal/testkit"
)

func (c *wsClient) msg(v map[string]any) {
	c.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		c.t.Fatal(err)
	}
	c.text(string(b))
}

// spoken reads one piece: speaking, its audio, spoken; it returns the text, phonemes and gain.
func (c *wsClient) spoken(index int) (text, phonemes string, gain float64) {
	c.t.Helper()
	sp := c.expect("speaking")
	if sp["index"] != float64(index) {
		c.t.Fatalf("speaking %v, want index %d", sp, index)
	}
	pcm := c.binary()
	done := c.expect("spoken")
	if done["index"] != float64(index) || int(done["samples"].(float64))*2 != len(pcm) {
		c.t.Fatalf("spoken %v after %d bytes of audio", done, len(pcm))
	}
	if math.Abs(done["durationMs"].(float64)-done["samples"].(float64)/24) > 1e-6 {
		c.t.Errorf("spoken durationMs %v for %v samples", done["durationMs"], done["samples"])
	}
	phonemes, gain = decodePhonemes(c.t, pcm)
	return sp["text"].(string), phonemes, gain
}

func openSpeak(t *testing.T, s *speakingServer) *wsClient {
	t.Helper()
	c := dial(t, s.wsURL("/v1/speak/stream"), nil)
	if r := c.expect("ready"); r["sample_rate"] != 24000.0 || r["format"] != "pcm16le" {
		t.Fatalf("ready %v", r)
	}
	if f := c.expect("format"); f["contentType"] != "audio/L16; rate=24000; channels=1" {
		t.Fatalf("format %v", f)
	}
	return c
}

func TestSpeakStream(t *testing.T) {
	testkit.CheckLeaks(t)
	s := newSpeakingServer(t, Config{})
	c := openSpeak(t, s)

	c.msg(map[string]any{"type": "start", "voice": "af_heart", "speed": 1.0, "split_chars": 30, "seed": 7})
	// Text arrives a few characters at a time; the first sentence is spoken alone, as soon as
	// it is complete.
	for _, part := range []string{"Hel", "lo wor", "ld. The ", "cat sat. Read the test. Hello. "} {
		c.msg(map[string]any{"type": "text", "text": part})
	}
	pieces := []struct{ text, phonemes string }{
		{"Hello world.", "həlˈO wˈɜɹld."},
		{"The cat sat. Read the test.", "ði kˈæt sˈæt. ɹˈid ði tˈɛst."}, // batched up to 30 characters
		{"Hello.", "həlˈO."},
	}
	for i, want := range pieces {
		text, ps, gain := c.spoken(i)
		if text != want.text || ps != want.phonemes || math.Abs(gain-1) > 0.01 {
			t.Errorf("piece %d: %q → %q (gain %.2f), want %q → %q", i, text, ps, gain, want.text, want.phonemes)
		}
	}
	// A voice change applies to the pieces queued after it.
	c.msg(map[string]any{"type": "start", "voice": "am_adam"})
	c.msg(map[string]any{"type": "flush", "text": "the cat"}) // no sentence end: flush speaks it
	if text, _, gain := c.spoken(3); text != "the cat" || math.Abs(gain-0.9) > 0.01 {
		t.Errorf("after start{am_adam}: %q at gain %.2f, want \"the cat\" at 0.9", text, gain)
	}
	// Text without punctuation breaks on a space past split_chars.
	c.msg(map[string]any{"type": "text", "text": "hello world hello world hello world hello world hello"})
	if text, _, _ := c.spoken(4); text != "hello world hello world hello" {
		t.Errorf("unpunctuated piece %q", text)
	}
	c.msg(map[string]any{"type": "end", "text": " world."})
	if text, _, _ := c.spoken(5); text != "world hello world hello world." {
		t.Errorf("end piece %q", text)
	}
	c.expect("done")
	if code := c.closed(); code != websocket.StatusNormalClosure {
		t.Errorf("close after done: %v", code)
	}
}

func TestSpeakStreamBadInput(t *testing.T) {
	testkit.CheckLeaks(t)
	s := newSpeakingServer(t, Config{})
	c := openSpeak(t, s)
	tests := []struct {
		name  string
		frame string
		bin   bool
		want  string
	}{
		{"malformed json", `{"type":"text",`, false, "malformed_json"},
		{"not an object", `"hello"`, false, "malformed_json"},
		{"no type", `{"text":"hi"}`, false, "malformed_json"},
		{"unknown type", `{"type":"sing"}`, false, "unknown_message"},
		{"binary", "\x00\x01", true, "binary_not_accepted"},
		{"voice not mounted", `{"type":"start","voice":"nobody"}`, false, "voice_not_mounted"},
		{"speed", `{"type":"start","speed":3}`, false, "speed_out_of_range"},
		{"split", `{"type":"start","split_chars":-1}`, false, "invalid_split_chars"},
		// Without the cap the splitter kept every unpunctuated byte waiting for split_chars.
		{"split over the cap", `{"type":"start","split_chars":1000000000}`, false, "invalid_split_chars"},
		{"nothing to say", `{"type":"flush","text":"🙂"}`, false, ""},
	}
	for _, tc := range tests {
		if tc.bin {
			c.send(websocket.MessageBinary, []byte(tc.frame))
		} else {
			c.text(tc.frame)
		}
		if tc.want != "" {
			c.expectError(tc.want)
			continue
		}
		// A piece with nothing to say is announced and spoken as zero samples.
		c.expect("speaking")
		if sp := c.expect("spoken"); sp["samples"] != 0.0 {
			t.Errorf("%s: spoken %v", tc.name, sp)
		}
	}
	// A long voice name is refused without being quoted back whole.
	c.msg(map[string]any{"type": "start", "voice": strings.Repeat("v", 1<<20)})
	if e := c.expect("error"); e["name"] != "voice_not_mounted" || len(e["message"].(string)) > 200 {
		t.Errorf("a 1 MiB voice name: %s, %d bytes of message", e["name"], len(e["message"].(string)))
	}
	// The socket survived all of it, and the refused start changed nothing (af_heart, gain 1).
	c.msg(map[string]any{"type": "flush", "text": "Hello."})
	if _, ps, gain := c.spoken(1); ps != "həlˈO." || math.Abs(gain-1) > 0.01 {
		t.Errorf("after refusals: %q gain %.2f", ps, gain)
	}
	c.conn.Close(websocket.StatusNormalClosure, "")
}

// cancel drops the queued pieces and the buffered text; frames of the cancelled pieces never
// follow "cancelled"; the socket carries on.
func TestSpeakStreamCancel(t *testing.T) {
	testkit.CheckLeaks(t)
	s := newSpeakingServer(t, Config{})
	c := openSpeak(t, s)
	// Hold the model so the pieces queue up behind it.
	release, err := s.svc.speech.Kokoro.Hold(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	c.msg(map[string]any{"type": "start", "split_chars": 1})
	c.msg(map[string]any{"type": "text", "text": strings.Repeat("The cat sat. ", 20) + "And then"})
	c.expect("speaking") // piece 0 waits for the model
	c.expect("queued")
	c.msg(map[string]any{"type": "cancel"})
	c.expect("cancelled")
	release()
	c.msg(map[string]any{"type": "flush", "text": "Hello."})
	// The next frames are the new piece's: nothing of the cancelled ones, nor "And then".
	sp := c.expect("speaking")
	if sp["text"] != "Hello." {
		t.Fatalf("after cancel: %v", sp)
	}
	c.binary()
	c.expect("spoken")
	c.conn.Close(websocket.StatusNormalClosure, "")
}

// Another socket holding the model makes this one wait, told by "queued", not refused.
func TestSpeakStreamQueuedBehindAnotherSocket(t *testing.T) {
	testkit.CheckLeaks(t)
	s := newSpeakingServer(t, Config{})
	release, err := s.svc.speech.Kokoro.Hold(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	c := openSpeak(t, s)
	c.msg(map[string]any{"type": "flush", "text": "Hello world."})
	c.expect("speaking")
	c.expect("queued")
	release()
	c.binary()
	c.expect("spoken")
	c.conn.Close(websocket.StatusNormalClosure, "")
}

func TestSpeakStreamIdleCloses(t *testing.T) {
	testkit.CheckLeaks(t)
	s := newSpeakingServer(t, Config{})
	s.speak.IdleTimeout = 200 * time.Millisecond
	c := openSpeak(t, s)
	c.expectError("idle_timeout")
	if code := c.closed(); code != websocket.StatusPolicyViolation {
		t.Errorf("idle close status %v", code)
	}
}

// Speaking is not idle: a piece waiting for the model longer than the timeout is not cut off.
func TestSpeakStreamNotIdleWhileSpeaking(t *testing.T) {
	testkit.CheckLeaks(t)
	s := newSpeakingServer(t, Config{})
	s.speak.IdleTimeout = 100 * time.Millisecond
	release, err := s.svc.speech.Kokoro.Hold(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	c := openSpeak(t, s)
	c.msg(map[string]any{"type": "flush", "text": "Hello."})
	c.expect("speaking")
	c.expect("queued")
	time.Sleep(300 * time.Millisecond) // three idle periods pass while the piece waits
	release()
	c.binary()
	c.expect("spoken")
	c.expectError("idle_timeout") // and once it is spoken, idle counts again
}

func TestSpeakStreamOrigins(t *testing.T) {
	s := newSpeakingServer(t, Config{Origins: door.MustOrigins("*.app.example")})
	for origin, status := range map[string]int{"https://evil.example": 403, "https://web.app.example": 101} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		conn, resp, err := websocket.Dial(ctx, s.wsURL("/v1/speak/stream"), &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {origin}}})
		cancel()
		if status == 101 {
			if err != nil {
				t.Errorf("%s refused: %v", origin, err)
				continue
			}
			conn.Close(websocket.StatusNormalClosure, "")
			continue
		}
		if err == nil {
			conn.CloseNow()
			t.Errorf("%s upgraded", origin)
			continue
		}
		var f door.ErrorFrame
		json.NewDecoder(resp.Body).Decode(&f)
		if resp.StatusCode != status || f.Name != "origin_not_allowed" {
			t.Errorf("%s: %d %+v", origin, resp.StatusCode, f)
		}
	}
}
