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
)

// TestLiveKitGenerateReply: LiveKit Agents' OpenAI realtime plugin (@livekit/agents-plugin-openai
// 1.9.0 from npm, unchanged) against the built binary: a text turn whose generateReply() resolves.
// The plugin waits for its response.create's metadata.client_event_id in response.created and
// rejects after 10 s without it (issue 23: voiced used to send metadata null).
func TestLiveKitGenerateReply(t *testing.T) {
	checkLeaks(t)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the LiveKit plugin test needs Node 20")
	}
	dir, _ := filepath.Abs("livekit")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@livekit", "agents-plugin-openai", "package.json")); err != nil {
		t.Skip("tests/livekit/node_modules is missing: run `npm ci` in tests/livekit (make test does when npm is available)")
	}
	s := startRealtime(t, serverOpts{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "generate_reply.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "VOICED_BASE_URL="+s.Base+"/v1", "VOICED_JWT="+s.jwt("livekit-user", "acme"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	var r struct {
		Resolved bool    `json:"resolved"`
		Ms       float64 `json:"ms"`
		Text     string  `json:"text"`
		Error    string  `json:"error"`
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
		t.Fatalf("node output %q: %v\nstderr:\n%s", out, err, stderr.String())
	}
	if !r.Resolved || r.Error != "" {
		t.Fatalf("generateReply did not resolve: %s\nstderr:\n%s", out, stderr.String())
	}
	if !strings.Contains(r.Text, "Hello from LiveKit") {
		t.Errorf("reply text %q does not echo the user's message", r.Text)
	}
	s.stop()
}
