package tests

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voiced/voiced/audio"
)

// nodeScript runs tests/node/<script> with env and returns its stdout lines. It skips when node
// or the npm packages are missing (`make test` runs `npm ci` in tests/node when npm is there).
func nodeScript(t *testing.T, script string, env []string, args ...string) []string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed (Debian package nodejs, with npm: scripts/install-deps.sh): the openai npm package tests need Node 20")
	}
	dir, _ := filepath.Abs("node")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "openai", "package.json")); err != nil {
		t.Skip("tests/node/node_modules is missing: run `make node-deps` (npm ci in tests/node: the npm package openai)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{script}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v\nstdout:\n%s\nstderr:\n%s", script, err, out, stderr.String())
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// TestNodeOpenAIAudio: the official openai npm package's audio.speech.create and
// audio.transcriptions.create, pointed at voiced with the service token as apiKey, round-trip a
// sentence to its phonemes.
func TestNodeOpenAIAudio(t *testing.T) {
	checkLeaks(t)
	s := startServer(t, serverOpts{})
	want := expectedPhonemes(t, roundTripSentence)
	lines := nodeScript(t, "speech.mjs", []string{"VOICED_BASE_URL=" + s.Base + "/v1", "VOICED_API_KEY=" + s.Token}, roundTripSentence)
	var r struct {
		Bytes    int     `json:"bytes"`
		Text     string  `json:"text"`
		Verbose  string  `json:"verbose"`
		Duration float64 `json:"duration"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
		t.Fatalf("node output %q: %v", lines, err)
	}
	if r.Text != want || r.Verbose != want {
		t.Fatalf("openai npm round trip:\n json    %q\n verbose %q\n want    %q", r.Text, r.Verbose, want)
	}
	if r.Bytes <= 44 || r.Duration <= 0 {
		t.Errorf("speech WAV %d bytes, transcription duration %v", r.Bytes, r.Duration)
	}
	s.stop()
}

// TestNodeOpenAIRealtime: the official openai npm package's GA OpenAIRealtimeWS over TLS (test
// CA via NODE_EXTRA_CA_CERTS), a key minted by client.realtime.clientSecrets.create with a
// principal JWT, then a text turn and a server_vad audio turn on real speech.
func TestNodeOpenAIRealtime(t *testing.T) {
	checkLeaks(t)
	s := startRealtime(t, serverOpts{TLS: true})
	speech := append(append(silence24k(0.5), sileroSpeech(t, "samples.pcm")...), silence24k(1.5)...)
	pcmFile := filepath.Join(t.TempDir(), "speech.pcm")
	if err := os.WriteFile(pcmFile, audio.Int16ToBytes(speech), 0o600); err != nil {
		t.Fatal(err)
	}
	lines := nodeScript(t, "realtime.mjs", []string{
		"VOICED_BASE_URL=" + s.Base + "/v1", "VOICED_JWT=" + s.jwt("node-user", "acme"),
		"NODE_EXTRA_CA_CERTS=" + testCA.CAFile,
	}, pcmFile)
	type nodeTurn struct {
		Turn       string `json:"turn"`
		Status     string `json:"status"`
		Samples    int    `json:"samples"`
		Transcript string `json:"transcript"`
	}
	turns := map[string]nodeTurn{}
	for _, l := range lines {
		var r nodeTurn
		if json.Unmarshal([]byte(l), &r) == nil && r.Turn != "" {
			turns[r.Turn] = r
		}
	}
	for _, name := range []string{"text", "audio"} {
		r, ok := turns[name]
		if !ok {
			t.Fatalf("no %s turn in the node output:\n%s", name, strings.Join(lines, "\n"))
		}
		if r.Status != "completed" || r.Samples == 0 || r.Transcript == "" {
			t.Errorf("%s turn: status %q, %d audio samples, transcript %q", name, r.Status, r.Samples, r.Transcript)
		}
	}
	if !strings.Contains(turns["text"].Transcript, "Hello from node") {
		t.Errorf("text turn transcript %q does not echo the question", turns["text"].Transcript)
	}
	s.stop()
}
