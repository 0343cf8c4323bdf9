package speechdoor

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/voiced/voiced/audio"
)

// FuzzTranscriptPush: any body pushed to POST /v1/audio/transcript/{id} (and any id) is answered
// with JSON: 200 {text, duration} billing in all no more audio than was pushed, or a named refusal;
// never a panic. The squelch (Silero on the fixture mount) runs on every body.
func FuzzTranscriptPush(f *testing.F) {
	h := newHearingServer(f, Config{})
	d := h.transcripts
	open := func() string {
		w := httptest.NewRecorder()
		d.Open(w, httptest.NewRequest("POST", "/v1/audio/transcript", nil))
		var m map[string]string
		if w.Code != http.StatusCreated || json.Unmarshal(w.Body.Bytes(), &m) != nil || m["id"] == "" {
			f.Fatalf("open: %d %s", w.Code, w.Body)
		}
		return m["id"]
	}
	id := open()
	var pushed, billed float64 // seconds pushed into the open transcript, and acknowledged as heard
	f.Add("", make([]byte, 640))
	f.Add("", []byte{1, 2, 3})
	f.Add("tr_nope", make([]byte, 2))
	f.Add("", audio.Int16ToBytes([]int16{32767, -32768, 0, 1000, -1000, 5}))
	f.Add("", []byte{})
	f.Fuzz(func(t *testing.T, pathID string, body []byte) {
		target := pathID
		if target == "" {
			target = id
		}
		push := func() (int, map[string]any) {
			w := httptest.NewRecorder()
			r := httptest.NewRequest("POST", "/v1/audio/transcript/x", bytes.NewReader(body))
			r.SetPathValue("id", target)
			d.Push(w, r)
			var m map[string]any
			if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil {
				t.Fatalf("push %d bytes to %q: %d %q is not JSON", len(body), target, w.Code, w.Body)
			}
			return w.Code, m
		}
		status, m := push()
		if status == http.StatusRequestEntityTooLarge && m["name"] == "transcript_limit_reached" {
			// The open transcript is full: close it and push into a fresh one.
			w := httptest.NewRecorder()
			r := httptest.NewRequest("DELETE", "/v1/audio/transcript/x", nil)
			r.SetPathValue("id", id)
			d.Close(w, r)
			id, pushed, billed, target = open(), 0, 0, id
			status, m = push()
		}
		if status != http.StatusOK {
			if name, _ := m["name"].(string); name == "" || m["message"] == "" || status < 400 {
				t.Fatalf("push %d bytes: %d %v is not a named refusal", len(body), status, m)
			}
			if len(body)%2 == 1 && len(body) <= FrameLimit && target == id && m["name"] != "odd_length_pcm" {
				t.Fatalf("odd-length push: %d %v", status, m)
			}
			return
		}
		if target != id {
			t.Fatalf("a push to unknown id %q answered 200", target)
		}
		if len(body)%2 == 1 {
			t.Fatalf("an odd-length push (%d bytes) was taken", len(body))
		}
		pushed += float64(len(body)/2) / audio.WhisperSampleRate
		dur, ok := m["duration"].(float64)
		billed += dur
		if _, text := m["text"].(string); !ok || !text || dur < 0 || billed > pushed+1e-6 {
			t.Fatalf("push ack %v: %.4f s billed in all for %.4f s pushed (a duration is never negative, text a string)", m, billed, pushed)
		}
	})
}
