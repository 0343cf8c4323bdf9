package tests

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// imageLLM stands in for a model that sees images: it records each request's messages and, when
// the last user message carries an image_url part, says "I see a red square."
type imageLLM struct {
	mu     sync.Mutex
	images []string // the image_url.url of every image part received
}

func (f *imageLLM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	answer := "No image."
	for _, m := range req.Messages {
		var parts []struct {
			Type     string `json:"type"`
			ImageURL struct {
				URL string `json:"url"`
			} `json:"image_url"`
		}
		if json.Unmarshal(m.Content, &parts) != nil {
			continue
		}
		for _, p := range parts {
			if p.Type == "image_url" {
				f.mu.Lock()
				f.images = append(f.images, p.ImageURL.URL)
				f.mu.Unlock()
				answer = "I see a red square."
			}
		}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": answer}}}})
	fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", b)
}

// TestAgentsSDKAddImage: the Agents SDK's session.addImage (Node WebSocket transport, unchanged)
// against the built binary: the image reaches the mind as an image part, and the answer about it
// comes back spoken into the SDK's history (issue 23: addImage used to be dropped silently).
func TestAgentsSDKAddImage(t *testing.T) {
	checkLeaks(t)
	needFlag(t, "mind-url")
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the Agents SDK test needs Node 20")
	}
	dir, _ := filepath.Abs("agents")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@openai", "agents-realtime", "package.json")); err != nil {
		t.Skip("tests/agents/node_modules is missing: run `npm ci` in tests/agents (make test does when npm is available)")
	}
	img := image.NewRGBA(image.Rect(0, 0, 4, 4))
	for y := range 4 {
		for x := range 4 {
			img.Set(x, y, color.RGBA{R: 255, A: 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	dataURL := "data:image/png;base64," + base64.StdEncoding.EncodeToString(buf.Bytes())
	llm := &imageLLM{}
	fake := httptest.NewServer(llm)
	defer fake.Close()
	s := startRealtime(t, serverOpts{Args: []string{"--mind-url", fake.URL + "/v1", "--mind-model", "fake-vision"}})

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "image.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "VOICED_WS_URL="+s.WSBase+"/v1/realtime?model=gpt-realtime", "VOICED_JWT="+s.jwt("agents-image", "acme"),
		"IMAGE_DATA_URL="+dataURL)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	var r struct {
		Errors  []string `json:"errors"`
		Reply   string   `json:"reply"`
		History any      `json:"history"`
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
		t.Fatalf("node output %q: %v\nstderr:\n%s", out, err, stderr.String())
	}
	if len(r.Errors) > 0 {
		t.Errorf("the SDK reported errors: %v", r.Errors)
	}
	llm.mu.Lock()
	images := append([]string(nil), llm.images...)
	llm.mu.Unlock()
	if len(images) == 0 || images[0] != dataURL {
		t.Fatalf("the mind received images %d (want the SDK's data URL as an image part)", len(images))
	}
	if !strings.Contains(r.Reply, "I see a red square.") {
		t.Errorf("the SDK's reply %q (history %v) is not the mind's answer about the image", r.Reply, r.History)
	}
	s.stop()
}
