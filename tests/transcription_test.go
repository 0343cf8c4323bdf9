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
		Logprobs       []struct {
			Token   string  `json:"token"`
			Logprob float64 `json:"logprob"`
			Bytes   []int   `json:"bytes"`
		} `json:"logprobs"`
		DeltaLogprobs [][]struct {
			Token   string  `json:"token"`
			Logprob float64 `json:"logprob"`
		} `json:"deltaLogprobs"`
	}
	got := map[string]result{}
	for _, l := range lines {
		var r result
		if json.Unmarshal([]byte(l), &r) == nil && r.Dialect != "" {
			got[r.Dialect] = r
		}
	}
	want := map[string][2]string{"ga": {"session.created", "session.updated"}, "beta": {"transcription_session.created", "transcription_session.updated"},
		"intent": {"transcription_session.created", "transcription_session.updated"}}
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
		// include: ["item.input_audio_transcription.logprobs"] (ga and intent ask; beta does not): the
		// completed event carries the decoder's tokens, whose text is the transcript's, each with
		// its log-probability (≤ 0, not all 0) and its bytes.
		if dialect == "beta" {
			if r.Logprobs != nil || slices.ContainsFunc(r.DeltaLogprobs, func(l []struct {
				Token   string  `json:"token"`
				Logprob float64 `json:"logprob"`
			}) bool {
				return l != nil
			}) {
				t.Errorf("beta: logprobs without include: %+v %+v", r.Logprobs, r.DeltaLogprobs)
			}
		} else {
			// Each delta carries the tokens of the partial decode that it streams.
			streamed := 0
			for i, l := range r.DeltaLogprobs {
				if l == nil {
					t.Errorf("%s: delta %d (%q) has logprobs null", dialect, i, r.Deltas[i])
				}
				var text strings.Builder
				for _, lp := range l {
					text.WriteString(lp.Token)
					if lp.Logprob > 0 {
						t.Errorf("%s: delta token %+v", dialect, lp)
					}
				}
				if len(l) > 0 && strings.HasSuffix(text.String(), r.Deltas[i]) || len(l) > 0 && strings.HasSuffix(r.Deltas[i], text.String()) {
					streamed++
				}
			}
			if streamed == 0 {
				t.Errorf("%s: no delta carries its tokens: %q %+v", dialect, r.Deltas, r.DeltaLogprobs)
			}
			var joined strings.Builder
			var sum float64
			for _, lp := range r.Logprobs {
				joined.WriteString(lp.Token)
				sum += lp.Logprob
				if lp.Logprob > 0 || len(lp.Bytes) != len(lp.Token) && !strings.ContainsRune(lp.Token, '\uFFFD') {
					t.Errorf("%s: token %+v", dialect, lp)
				}
			}
			if len(r.Logprobs) == 0 || sum >= 0 || noSpace(joined.String()) != noSpace(strings.Join(r.Transcripts, "")) {
				t.Errorf("%s: logprobs %+v for transcripts %q", dialect, r.Logprobs, r.Transcripts)
			}
		}
		t.Logf("%s: %d deltas %q, transcripts %q, %d logprobs", dialect, len(r.Deltas), r.Deltas, r.Transcripts, len(r.Logprobs))
	}
	if got["ga"].CreatedSession["type"] != "transcription" {
		t.Errorf("GA session.created: %v", got["ga"].CreatedSession)
	}
	s.stop()
}

func noSpace(s string) string { return strings.Join(strings.Fields(s), "") }
