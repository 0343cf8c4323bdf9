package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/voiced/voiced/audio"
)

// TestNodeOpenAITranscriptionSession (issue 20): the official openai npm package opens a GA
// transcription session (a clientSecrets key with session.type "transcription", OpenAIRealtimeWS)
// and a beta one (beta.realtime.transcriptionSessions, the beta OpenAIRealtimeWS) against the
// built binary, streams real speech, and gets the turn's transcript, no response event, and
// response.create refused by name.
func TestNodeOpenAITranscriptionSession(t *testing.T) {
	checkLeaks(t)
	s := startRealtime(t, serverOpts{TLS: true})
	speech := append(append(silence24k(0.5), sileroSpeech(t, "samples.pcm")...), silence24k(1.5)...)
	pcmFile := filepath.Join(t.TempDir(), "speech.pcm")
	if err := os.WriteFile(pcmFile, audio.Int16ToBytes(speech), 0o600); err != nil {
		t.Fatal(err)
	}
	lines := nodeScript(t, "transcription.mjs", []string{
		"VOICED_BASE_URL=" + s.Base + "/v1", "VOICED_JWT=" + s.jwt("caption-user", "acme"),
		"NODE_EXTRA_CA_CERTS=" + testCA.CAFile,
	}, pcmFile)
	type result struct {
		Dialect        string         `json:"dialect"`
		Created        string         `json:"created"`
		CreatedSession map[string]any `json:"createdSession"`
		Updated        string         `json:"updated"`
		Deltas         []string       `json:"deltas"`
		Completed      int            `json:"completed"`
		Transcripts    []string       `json:"transcripts"`
		Responses      []string       `json:"responses"`
		Refusal        string         `json:"refusal"`
	}
	got := map[string]result{}
	for _, l := range lines {
		var r result
		if json.Unmarshal([]byte(l), &r) == nil && r.Dialect != "" {
			got[r.Dialect] = r
		}
	}
	want := map[string][2]string{"ga": {"session.created", "session.updated"}, "beta": {"transcription_session.created", "transcription_session.updated"}}
	for dialect, names := range want {
		r, ok := got[dialect]
		if !ok {
			t.Fatalf("no %s session in the node output:\n%s", dialect, strings.Join(lines, "\n"))
		}
		if r.Created != names[0] || r.Updated != names[1] {
			t.Errorf("%s: %s / %s, want %v", dialect, r.Created, r.Updated, names)
		}
		if r.Completed == 0 || len(r.Deltas) == 0 || slices.Contains(r.Transcripts, "") {
			t.Errorf("%s: %d completed transcripts %q, %d deltas", dialect, r.Completed, r.Transcripts, len(r.Deltas))
		}
		if len(r.Responses) > 0 {
			t.Errorf("%s: a transcription session answered: %v", dialect, r.Responses)
		}
		if r.Refusal != "transcription_session" {
			t.Errorf("%s: response.create refused as %q", dialect, r.Refusal)
		}
		t.Logf("%s: %d deltas %q, transcripts %q", dialect, len(r.Deltas), r.Deltas, r.Transcripts)
	}
	if got["ga"].CreatedSession["type"] != "transcription" {
		t.Errorf("GA session.created: %v", got["ga"].CreatedSession)
	}
	s.stop()
}
