package speechdoor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/internal/testkit"
	"github.com/voiced/voiced/speechcore/squelch"
)

// TestTranscriptLanguage (issue 21): POST /v1/audio/transcript takes a language (?language= or
// a JSON body) as the other hearing doors do: the fixture's Spanish speech told es, or auto
// (detected from the decoder's language scores), reads back as its phonemes and the acks name
// the language; the server's default (en) garbles it; a language the mount lacks is refused by
// name at the open. The squelch's thresholds are lowered so it admits the codec's tones (Silero
// opens on speech, not on tones).
func TestTranscriptLanguage(t *testing.T) {
	testkit.CheckLeaks(t)
	h := newHearingServer(t, Config{})
	h.transcripts.Squelch = squelch.Config{OpenThreshold: 1e-9, CloseThreshold: 1e-10}
	c := transcriptClient{t: t, url: h.srv.URL}
	es, esText := codecSpeech(t, spanishSpeech)
	clip := audio.Float32ToPCM16(append(append(make([]float32, 1600), es...), make([]float32, 8000)...))
	for name, tc := range map[string]struct {
		query, body, wantLang string
		match                 bool
	}{
		"told es": {"?language=es", "", "es", true},
		"auto":    {"", `{"language":"auto"}`, "es", true},
		"default": {"", "", "en", false},
		"told en": {"?language=english", "", "en", false},
	} {
		t.Run(name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", h.srv.URL+"/v1/audio/transcript"+tc.query, bytes.NewReader([]byte(tc.body)))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var opened struct{ ID, Language string }
			err = json.NewDecoder(resp.Body).Decode(&opened)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusCreated || opened.ID == "" {
				t.Fatalf("open: %d %+v", resp.StatusCode, opened)
			}
			if status, ack := c.do("POST", "/v1/audio/transcript/"+opened.ID, clip); status != 200 {
				t.Fatalf("push: %d %v", status, ack)
			}
			status, done := c.do("DELETE", "/v1/audio/transcript/"+opened.ID, nil)
			if status != 200 || done["language"] != tc.wantLang || strings.Contains(fmt.Sprint(done["text"]), esText) != tc.match {
				t.Fatalf("close: %d %v, want language %s and the text %q: %v", status, done, tc.wantLang, esText, tc.match)
			}
		})
	}
	status, e := c.do("POST", "/v1/audio/transcript?language=fr", nil)
	if status != http.StatusBadRequest || e["name"] != "language_not_served" {
		t.Fatalf("fr: %d %v", status, e)
	}
}
