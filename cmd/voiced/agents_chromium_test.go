package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/internal/testkit"
)

// agentsDir is tests/agents: the npm packages of the Agents SDK test (`make node-deps` installs them).
const agentsDir = "../../tests/agents"

// agentsBundle bundles tests/agents/entry.mjs — @openai/agents-realtime, unchanged — with
// esbuild into one browser script (IIFE), or skips when the npm packages are not installed.
func agentsBundle(t *testing.T) []byte {
	t.Helper()
	dir, err := filepath.Abs(agentsDir)
	if err != nil {
		t.Fatal(err)
	}
	esbuild := filepath.Join(dir, "node_modules", ".bin", "esbuild")
	for _, need := range []string{filepath.Join(dir, "node_modules", "@openai", "agents-realtime", "package.json"), esbuild} {
		if _, err := os.Stat(need); err != nil {
			t.Skipf("tests/agents/node_modules is missing (%s): run `make node-deps` (npm ci in tests/agents): the OpenAI Agents SDK is not tested against voiced", filepath.Base(need))
		}
	}
	out := filepath.Join(t.TempDir(), "agents.js")
	cmd := exec.Command(esbuild, "entry.mjs", "--bundle", "--format=iife", "--platform=browser",
		"--target=chrome110", "--log-level=warning", "--outfile="+out)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("esbuild: %v\n%s", err, b)
	}
	js, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// agentsPage is the page the bundle runs in: nothing but the script.
const agentsPage = `<!doctype html>
<html><head><meta charset="utf-8"><title>Agents SDK against voiced</title></head>
<body><p>OpenAI Agents SDK (RealtimeSession over OpenAIRealtimeWebRTC) against voiced.</p>
<script src="/agents.js"></script></body></html>`

// TestAgentsSDKWebRTCInChromium: the OpenAI Agents SDK's browser transport, OpenAIRealtimeWebRTC
// under a RealtimeSession with a RealtimeAgent (@openai/agents-realtime from npm, bundled with
// esbuild), connects to voiced unchanged and holds a spoken turn. The page is served from
// another origin than voiced's (voiced runs with --allow-origin for it), so the SDK's SDP POST
// with Authorization and X-OpenAI-Agents-SDK passes a CORS preflight; its key is an ek_ minted
// by the page's own server from /v1/realtime/client_secrets with a principal JWT, as an app's
// backend mints it. The microphone is Chromium's fake device playing espeak-ng speech; the
// fixture mount and the echo mind answer.
func TestAgentsSDKWebRTCInChromium(t *testing.T) {
	browser := chromiumPath(t)
	bundle := agentsBundle(t)
	mount := writeFixtureMount(t)
	wav, spoken := agentsSpeechWAV(t, "Hello there. What is the weather like today?")

	dir := t.TempDir()
	secret := []byte("agents-test-principal-secret-0123456789abcdef")
	secretFile := filepath.Join(dir, "jwt.secret")
	if err := os.WriteFile(secretFile, secret, 0o600); err != nil {
		t.Fatal(err)
	}

	// The page's origin is known before voiced starts, so voiced can allow it (and only it).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pageOrigin := "http://" + ln.Addr().String()
	srv := startServer(t, append(baseEnv(t), "VOICED_TOKEN=service-token"),
		"--speech-assets", mount, "--jwt-secret-file", secretFile, "--mind", "echo", "--allow-origin", pageOrigin)
	base := "http://" + srv.addr
	if base == pageOrigin {
		t.Fatal("the page and voiced share an origin: the test would not cross origins")
	}

	signed := testkit.JWT(t, secret, map[string]any{"sub": "agents-sdk-tester", "exp": time.Now().Add(10 * time.Minute)})

	// The app's backend: GET /ek mints an ephemeral key from voiced, as the Agents SDK's docs
	// have a server do, and hands the page its value.
	mints := make(chan string, 16)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, agentsPage)
	})
	mux.HandleFunc("GET /agents.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		w.Write(bundle)
	})
	mux.HandleFunc("GET /ek", func(w http.ResponseWriter, r *http.Request) {
		value, err := mintClientSecret(r.Context(), base, string(signed))
		note := value
		if err != nil {
			note = "error: " + err.Error()
		}
		select { // never blocks the handler: more than 16 mints fail the count anyway
		case mints <- note:
		default:
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, value)
	})
	mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	page := httptest.NewUnstartedServer(mux)
	page.Listener.Close()
	page.Listener = ln
	page.Start()
	defer page.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	b := startChromium(t, ctx, browser, "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
		"--use-file-for-fake-audio-capture="+wav, "--autoplay-policy=no-user-gesture-required")
	tab := b.newTab(t, ctx)
	tab.call(t, ctx, "Runtime.enable", nil, nil)
	tab.call(t, ctx, "Log.enable", nil, nil)
	tab.call(t, ctx, "Page.navigate", map[string]any{"url": page.URL + "/?calls=" + url.QueryEscape(base+"/v1/realtime/calls")}, nil)

	// Wait for a whole turn: speech heard, the answer's response.done, and its audio played out on
	// the track (output_audio_buffer.stopped after .started); or for the SDK to fail.
	tab.eval(t, ctx, `new Promise((ok) => {
		const t0 = Date.now();
		(function poll() {
			const s = window.agentsState, evs = window.agentsEvents;
			if (s && evs) {
				const types = evs.map((e) => e.type);
				const from = types.indexOf("input_audio_buffer.speech_started");
				const after = from < 0 ? [] : types.slice(from);
				const i = after.indexOf("response.done");
				if (i >= 0 && after.slice(i).includes("output_audio_buffer.stopped") || s.phase === "failed") return ok(true);
			}
			if (Date.now() - t0 > 150000) return ok(false);
			setTimeout(poll, 100);
		})();
	})`)
	statsJSON := tab.eval(t, ctx, `window.agentsStats().then((s) => JSON.stringify(s))`)
	stateJSON := tab.eval(t, ctx, `JSON.stringify(window.agentsState)`)
	eventsJSON := tab.eval(t, ctx, `JSON.stringify(window.agentsEvents)`)
	tab.eval(t, ctx, `window.agentsHangUp(); true`)

	var st struct {
		Phase      string
		CallID     string
		KeyPrefix  string
		Connection []string
		Errors     []string
		History    []struct{ Type, Role, Status, Text string }
	}
	if err := json.Unmarshal([]byte(stateJSON), &st); err != nil {
		t.Fatalf("page state %q: %v", stateJSON, err)
	}
	var stats struct {
		State           string
		SentPackets     int
		ReceivedPackets int
		ReceivedEnergy  float64
		ReceivedSeconds float64
		Codecs          []string
	}
	if err := json.Unmarshal([]byte(statsJSON), &stats); err != nil {
		t.Fatalf("stats %q: %v", statsJSON, err)
	}
	var events []map[string]any
	if err := json.Unmarshal([]byte(eventsJSON), &events); err != nil {
		t.Fatalf("events %q: %v", eventsJSON, err)
	}
	types := make([]string, len(events))
	for i, ev := range events {
		types[i], _ = ev["type"].(string)
	}
	t.Logf("SDK: phase %s, call %s, connection %v, errors %v", st.Phase, st.CallID, st.Connection, st.Errors)
	t.Logf("SDK history: %+v", st.History)
	t.Logf("peer connection: %s", statsJSON)
	t.Logf("events (%d): %s", len(types), strings.Join(types, " "))
	t.Logf("espeak-ng said %v", spoken)

	nmint := 0
	for drained := false; !drained; {
		select {
		case m := <-mints:
			if strings.HasPrefix(m, "error: ") {
				t.Errorf("minting the page's key: %s", m)
			} else if !strings.HasPrefix(m, "ek_") {
				t.Errorf("client_secrets value %q is not an ek_ key", m)
			}
			nmint++
		default:
			drained = true
		}
	}

	if st.Phase != "connected" || st.KeyPrefix != "ek_" || st.CallID == "" || nmint != 1 {
		t.Errorf("connect: phase %q, key %q…, call id %q, %d keys minted: want connected with one ek_ key and a call id from Location",
			st.Phase, st.KeyPrefix, st.CallID, nmint)
	}
	for _, e := range st.Errors {
		t.Errorf("the SDK reported an error: %s", e)
	}

	// The turn, in order; and the answer's playback on the track, announced after the response
	// began. (voiced sends output_audio_buffer.started at the 20 ms pacer's first packet, so a short
	// reply generated within one packet time has its response.done first; the SDK does not depend
	// on that order.)
	turn := []string{"session.created", "session.updated", "input_audio_buffer.speech_started",
		"input_audio_buffer.speech_stopped", "input_audio_buffer.committed", "response.created", "response.done"}
	if missing := subsequence(types, turn); missing != "" {
		t.Errorf("the SDK saw no %s in order %v", missing, turn)
	}
	playback := []string{"session.created", "response.created", "output_audio_buffer.started", "output_audio_buffer.stopped"}
	if missing := subsequence(types, playback); missing != "" {
		t.Errorf("the SDK saw no %s in order %v", missing, playback)
	}
	for _, ev := range events {
		switch ev["type"] {
		case "error":
			t.Errorf("server error event: %v", ev["error"])
		case "response.output_audio.delta", "response.audio.delta":
			t.Errorf("%s on the data channel: over WebRTC the audio travels on the track", ev["type"])
		case "response.done":
			if r, _ := ev["response"].(map[string]any); r["status"] != "completed" {
				t.Errorf("response.done %v: want completed", r["status"])
			}
		}
	}
	// The SDK turned voiced's items into its history: the user's turn and a spoken answer.
	var user, assistant bool
	for _, h := range st.History {
		user = user || h.Type == "message" && h.Role == "user"
		assistant = assistant || h.Type == "message" && h.Role == "assistant" && strings.TrimSpace(h.Text) != ""
	}
	if !user || !assistant {
		t.Errorf("the SDK's history %+v: want a user message and an assistant message with its transcript", st.History)
	}
	// The microphone went out on the track and the answer came back on it, not silent.
	if stats.State != "connected" || stats.SentPackets == 0 || stats.ReceivedPackets == 0 || stats.ReceivedEnergy <= 0 {
		t.Errorf("peer connection %s: want connected, microphone packets sent, answer packets received with audio energy", statsJSON)
	}
	for _, l := range b.problems() {
		t.Errorf("browser: %s", l)
	}
}

// subsequence returns the first of want not found in order in got, or "".
func subsequence(got, want []string) string {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	if i < len(want) {
		return want[i]
	}
	return ""
}

// mintClientSecret is an app backend's POST /v1/realtime/client_secrets with a principal JWT.
func mintClientSecret(ctx context.Context, base, jwt string) (string, error) {
	body := `{"expires_after":{"anchor":"created_at","seconds":60},"session":{"type":"realtime","model":"gpt-realtime"}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/realtime/client_secrets", strings.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+jwt)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("client_secrets: %s: %s", resp.Status, b)
	}
	var out struct {
		Value string `json:"value"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return "", fmt.Errorf("client_secrets answer %s: %v", b, err)
	}
	return out.Value, nil
}

// agentsSpeechWAV is speechWAV with 6 s of quiet after the speech, so the answer plays out whole
// before Chromium's fake microphone loops the file and speaks again.
func agentsSpeechWAV(t *testing.T, text string) (string, time.Duration) {
	t.Helper()
	path, spoken := speechWAV(t, text)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pcm, rate, err := audio.DecodeWAVBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	all := append(audio.Float32ToInt16(pcm), make([]int16, 6*rate)...)
	var w bytes.Buffer
	if err := audio.EncodeWAV(&w, all, rate); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "speech-quiet.wav")
	if err := os.WriteFile(out, w.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return out, spoken
}
