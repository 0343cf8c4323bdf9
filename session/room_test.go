package session

import (
	"encoding/base64"
	"math"
	"testing"
	"time"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/internal/testkit"
)

// echoTurns plays a reply's audio back into the microphone of a WebSocket session (50 ms late,
// at half its level, as a speaker in a room would) while the user is silent, streaming it in
// real time, then commits, and returns how many turns the detector started on it.
func echoTurns(t *testing.T, echo any) int {
	testkit.CheckLeaks(t)
	ts := newTestServer(t, Config{EchoCancel: true, Engines: Engines{Ears: fakeEars{"hm"}, Voice: fakeVoice{},
		NewTurnDetector: newEnergyDetector}})
	c := ts.open(t)
	c.send(map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime",
		"audio":  map[string]any{"input": map[string]any{"turn_detection": map[string]any{"type": "server_vad", "create_response": false}}},
		"voiced": map[string]any{"echo_cancellation": echo}}})
	c.until("session.updated")
	c.send(map[string]any{"type": "conversation.item.create", "item": map[string]any{"type": "message", "role": "user",
		"content": []any{map[string]any{"type": "input_text", "text": "Tell me a long story about the sea, the ships that sail on it and the people who wait for them."}}}})
	c.until("conversation.item.done")
	c.send(map[string]any{"type": "response.create"})
	var reply []int16
	var first time.Time // when the client started playing the reply
	for _, ev := range c.until("response.done") {
		if ev["type"] == "response.output_audio.delta" {
			if first.IsZero() {
				first = time.Now()
			}
			b, _ := base64.StdEncoding.DecodeString(ev["delta"].(string))
			pcm, err := audio.BytesToInt16(b)
			if err != nil {
				t.Fatal(err)
			}
			reply = append(reply, pcm...)
		}
	}
	if len(reply) < 24000 {
		t.Fatalf("the reply spoke %d samples; want a second or more", len(reply))
	}
	mic := make([]int16, 24*50+len(reply)+24000)
	for i, v := range reply {
		mic[24*50+i] = v / 2
	}
	// A full-duplex client: its microphone streams in real time from when the reply started
	// playing (each 20 ms append sent as its last sample is recorded; those due while the
	// reply was still arriving go at once).
	for i := 0; i < len(mic); i += 480 {
		time.Sleep(time.Until(first.Add(time.Duration(i+480) * time.Second / 24000)))
		c.send(appendEvent(audio.Int16ToBytes(mic[i:min(i+480, len(mic))])))
	}
	c.send(map[string]any{"type": "input_audio_buffer.commit"})
	n := 0
	for _, ev := range c.until("input_audio_buffer.committed") {
		if ev["type"] == "input_audio_buffer.speech_started" {
			n++
		}
	}
	return n
}

// The reply's own audio, heard back through the room, starts no turn with the canceller (the
// default on a WebSocket) and does without it (voiced.echo_cancellation false).
func TestEchoCancelledBeforeTheDetector(t *testing.T) {
	if n := echoTurns(t, nil); n != 0 {
		t.Errorf("with the canceller (the WebSocket default) the reply's echo started %d turns; want 0", n)
	}
	if n := echoTurns(t, false); n == 0 {
		t.Error("without the canceller the reply's echo started no turn: the test cannot tell")
	}
}

// noiseHeard appends two seconds of a steady hiss under noise_reduction nr (nil: null) and
// returns the RMS of its last second as the recogniser hears it.
func noiseHeard(t *testing.T, nr any) float64 {
	testkit.CheckLeaks(t)
	ears := &recordingEars{}
	ts := newTestServer(t, Config{Engines: Engines{Ears: ears}})
	c := ts.open(t)
	c.send(map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime",
		"audio": map[string]any{"input": map[string]any{"turn_detection": nil, "noise_reduction": nr,
			"transcription": map[string]any{"model": "whisper-1"}}}}})
	c.until("session.updated")
	hiss := make([]int16, 2*24000)
	x := uint32(7)
	for i := range hiss {
		x = x*1664525 + 1013904223
		hiss[i] = int16(int32(x>>16)%3000 - 1500)
	}
	for i := 0; i < len(hiss); i += 480 {
		c.send(appendEvent(audio.Int16ToBytes(hiss[i : i+480])))
	}
	c.send(map[string]any{"type": "input_audio_buffer.commit"})
	c.until("conversation.item.input_audio_transcription.completed")
	ears.mu.Lock()
	defer ears.mu.Unlock()
	if len(ears.heard) != 1 {
		t.Fatalf("the recogniser heard %d windows; want 1", len(ears.heard))
	}
	h := ears.heard[0]
	return float64(audio.RMS(h[len(h)-16000:]))
}

// noise_reduction near_field / far_field suppress a steady noise before the recogniser hears it;
// null leaves it as it came.
func TestNoiseReductionIsReal(t *testing.T) {
	off := noiseHeard(t, nil)
	near := noiseHeard(t, map[string]any{"type": "near_field"})
	far := noiseHeard(t, map[string]any{"type": "far_field"})
	t.Logf("hiss RMS heard: null %.4f, near_field %.4f, far_field %.4f", off, near, far)
	if off < 0.015 {
		t.Fatalf("null: the hiss reached the recogniser at RMS %.4f; want it as sent (~0.021)", off)
	}
	if near > off/3 || far > near {
		t.Errorf("near_field left %.4f and far_field %.4f of a %.4f hiss; want near_field under a third, far_field no more", near, far, off)
	}
}

// A half-duplex (push-to-talk) WebSocket client takes a reply in a burst, plays it while it sends
// no microphone audio, then speaks: with the canceller on (the WebSocket default) every sample
// of its speech reaches the recogniser. The reference expires by the wall clock; consumed one
// sample per microphone sample it would still be "playing" under the speech, and the
// residual-echo gate would withhold the speech as echo.
func TestSpeechAfterAReplyPlayedInSilenceIsHeard(t *testing.T) {
	testkit.CheckLeaks(t)
	ears := &recordingEars{}
	ts := newTestServer(t, Config{EchoCancel: true, Engines: Engines{Ears: ears, Voice: fakeVoice{}}})
	c := ts.open(t)
	c.send(map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime",
		"audio": map[string]any{"input": map[string]any{"turn_detection": nil,
			"transcription": map[string]any{"model": "whisper-1"}}}}})
	c.until("session.updated")
	c.send(map[string]any{"type": "conversation.item.create", "item": map[string]any{"type": "message", "role": "user",
		"content": []any{map[string]any{"type": "input_text", "text": "Tell me a long story about the sea, the ships that sail on it and the people who wait for them."}}}})
	c.until("conversation.item.done")
	c.send(map[string]any{"type": "response.create"})
	reply := 0
	for _, ev := range c.until("response.done") {
		if ev["type"] == "response.output_audio.delta" {
			b, _ := base64.StdEncoding.DecodeString(ev["delta"].(string))
			reply += len(b) / 2
		}
	}
	if reply < 24000 {
		t.Fatalf("the reply spoke %d samples; want a second or more", reply)
	}
	// The client plays the reply (no microphone audio meanwhile), then the tail passes.
	time.Sleep(time.Duration(reply)*time.Second/24000 + 600*time.Millisecond)
	// The user speaks 1.5 s in the reply's own band (the reply is a 440 Hz tone), 200 ms of
	// silence each side, sent when the push-to-talk button is let go.
	const amp = 6000
	mic := make([]int16, 24000*19/10)
	for i := 4800; i < 4800+36000; i++ {
		mic[i] = int16(amp * math.Sin(2*math.Pi*440*float64(i)/24000))
	}
	for i := 0; i < len(mic); i += 480 {
		c.send(appendEvent(audio.Int16ToBytes(mic[i:min(i+480, len(mic))])))
	}
	c.send(map[string]any{"type": "input_audio_buffer.commit"})
	c.until("conversation.item.input_audio_transcription.completed")
	ears.mu.Lock()
	defer ears.mu.Unlock()
	if len(ears.heard) != 1 {
		t.Fatalf("the recogniser heard %d windows; want 1", len(ears.heard))
	}
	h := ears.heard[0]
	// The speech's 10 ms frames at 16 kHz, 50 ms in from each edge (the filter's latency and
	// the resampler's).
	want := amp / 32768.0 / math.Sqrt2
	frames, low := 0, 0
	for at := 3200 + 800; at+160 <= 3200+24000-800 && at+160 <= len(h); at += 160 {
		frames++
		if rms := float64(audio.RMS(h[at : at+160])); rms < want/2 {
			low++
		}
	}
	if frames < 140 {
		t.Fatalf("the recogniser heard %d samples; want the whole 1.9 s", len(h))
	}
	if low > 0 {
		t.Errorf("%d of the speech's %d frames reached the recogniser at under half their level (RMS %.3f): "+
			"the speech was cleaned against a reply that had finished playing", low, frames, want)
	}
}
