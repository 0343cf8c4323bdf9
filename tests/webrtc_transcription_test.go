package tests

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestWebRTCTranscriptionSession (issue 20 item 1, WebRTC): a pion client (as a browser SDK)
// with a GA key minted for a transcription session (client_secrets, session.type
// "transcription", include logprobs) posts its offer to POST /v1/realtime/calls, speaks real
// speech as Opus on its microphone track, and receives the turn's transcription deltas and
// completed transcript (with logprobs) on the oai-events data channel; the session never answers:
// no response.* and no output audio, and response.create is refused by name.
func TestWebRTCTranscriptionSession(t *testing.T) {
	checkLeaks(t)
	s := startRealtime(t, serverOpts{})
	code, body := s.post(t, "/v1/realtime/client_secrets", s.jwt("rtc-captions", "acme"),
		`{"expires_after":{"anchor":"created_at","seconds":60},"session":{"type":"transcription",`+
			`"audio":{"input":{"transcription":{"model":"whisper-1","language":"en"},`+
			`"turn_detection":{"type":"server_vad","silence_duration_ms":500}}},"include":["item.input_audio_transcription.logprobs"]}}`)
	var key struct {
		Value string `json:"value"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &key) != nil || !strings.HasPrefix(key.Value, "ek_") {
		t.Fatalf("POST /v1/realtime/client_secrets: %d %s", code, body)
	}
	c := newRTCClient(t)
	c.call(t, s, key.Value)
	created := c.until(t, "session.created", 10*time.Second)
	sess, _ := created[len(created)-1]["session"].(map[string]any)
	if sess["type"] != "transcription" {
		t.Fatalf("session.created over WebRTC: %v", sess)
	}

	done := make(chan struct{})
	go func() {
		defer close(done)
		c.speak(t, append(append(silence24k(0.5), sileroSpeech(t, "samples.pcm")...), silence24k(1.5)...))
	}()
	evs := c.until(t, "conversation.item.input_audio_transcription.completed", 30*time.Second)
	<-done
	if err := c.dc.SendText(`{"type":"response.create","event_id":"ev_no_answer"}`); err != nil {
		t.Fatal(err)
	}
	evs = append(evs, c.until(t, "error", 10*time.Second)...)
	refusal, _ := evs[len(evs)-1]["error"].(map[string]any)
	if refusal["code"] != "transcription_session" {
		t.Errorf("response.create refused as %v", refusal)
	}
	var deltas, completed int
	for _, e := range evs {
		typ, _ := e["type"].(string)
		switch {
		case strings.HasPrefix(typ, "response.") || strings.HasPrefix(typ, "output_audio_buffer."):
			t.Errorf("a transcription session answered: %s", typ)
		case typ == "conversation.item.input_audio_transcription.delta":
			deltas++
		case typ == "conversation.item.input_audio_transcription.completed":
			completed++
			if lps, _ := e["logprobs"].([]any); len(lps) == 0 {
				t.Errorf("completed without logprobs: %v", e)
			}
			if tr, _ := e["transcript"].(string); tr == "" {
				t.Errorf("completed with an empty transcript: %v", e)
			}
		}
	}
	if deltas == 0 || completed == 0 {
		t.Errorf("%d deltas, %d completed over the data channel", deltas, completed)
	}
	if n := len(c.replyPCM()); n > 0 {
		t.Errorf("the server's track carried %d samples: a transcription session speaks nothing", n)
	}
}
