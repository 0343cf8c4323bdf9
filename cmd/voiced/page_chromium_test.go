package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwt"
	"github.com/voiced/voiced/speechcore/audio"
)

// TestPageInChromium opens the page in headless Chromium with a fake microphone that plays
// real speech (espeak-ng), against voiced on the fixture mount with the echo mind: the page
// must mint a ticket, open /v1/voice, stream the microphone, and play the spoken answer.
// Chromium is driven over the DevTools protocol; its console and CSP reports fail the test.
func TestPageInChromium(t *testing.T) {
	browser := chromiumPath(t)
	mount := writeFixtureMount(t)
	wav := speechWAV(t, "Hello there. What is the weather like today?")

	dir := t.TempDir()
	secret := []byte("page-test-principal-secret-0123456789abcdef")
	secretFile := filepath.Join(dir, "jwt.secret")
	if err := os.WriteFile(secretFile, secret, 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, append(baseEnv(t), "VOICED_TOKEN=service-token"),
		"--speech-assets", mount, "--jwt-secret-file", secretFile, "--mind", "echo")
	base := "http://" + srv.addr

	tok, err := jwt.NewBuilder().Subject("page-tester").Expiration(time.Now().Add(10 * time.Minute)).Build()
	if err != nil {
		t.Fatal(err)
	}
	signed, err := jwt.Sign(tok, jwt.WithKey(jwa.HS256, secret))
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b := startChromium(t, ctx, browser, "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
		"--use-file-for-fake-audio-capture="+wav, "--autoplay-policy=no-user-gesture-required", "--window-size=1000,1200")
	tab := b.newTab(t, ctx)
	tab.call(t, ctx, "Page.enable", nil, nil)
	tab.call(t, ctx, "Runtime.enable", nil, nil)
	tab.call(t, ctx, "Log.enable", nil, nil)
	tab.call(t, ctx, "Page.addScriptToEvaluateOnNewDocument", map[string]any{"source": `
		window.__csp = [];
		document.addEventListener("securitypolicyviolation", (e) => window.__csp.push(e.violatedDirective + " " + e.blockedURI));`}, nil)
	tab.call(t, ctx, "Page.navigate", map[string]any{"url": base + "/"}, nil)
	tab.eval(t, ctx, `new Promise((ok) => document.readyState === "complete" ? ok() : addEventListener("load", () => ok()))`)

	tab.eval(t, ctx, fmt.Sprintf(`document.getElementById("credential").value = %q; document.getElementById("connect").click();`, signed))

	// A turn: the speech is heard, its end detected, the echo answer spoken and scheduled.
	summary := tab.eval(t, ctx, `new Promise((ok, fail) => {
		const t0 = Date.now();
		(function poll() {
			const s = window.voicedPage;
			const done = s.events["session.created"] && s.events["session.updated"] && s.sentAppends >= 25 &&
				s.events["input_audio_buffer.speech_stopped"] && s.events["response.created"] &&
				s.events["response.output_audio.delta"] && s.latency.stopToAudio.length > 0;
			if (done || s.phase === "failed" || s.phase === "closed") return ok(JSON.stringify(s));
			if (Date.now() - t0 > 90000) return ok(JSON.stringify(s));
			setTimeout(poll, 100);
		})();
	})`)
	var st struct {
		Phase       string
		SessionID   string
		Events      map[string]int
		SentAppends int
		SentSamples int
		Received    int `json:"receivedSamples"`
		Errors      []struct{ Code, Message string }
		Truncations []struct {
			ItemID     string `json:"item_id"`
			AudioEndMs int    `json:"audio_end_ms"`
		}
		Latency map[string][]float64
	}
	if err := json.Unmarshal([]byte(summary), &st); err != nil {
		t.Fatalf("page state %q: %v", summary, err)
	}
	t.Logf("page state: phase %s, session %s, %d appends (%.1f s), %.1f s received, latency %v, truncations %v, errors %v",
		st.Phase, st.SessionID, st.SentAppends, float64(st.SentSamples)/24000, float64(st.Received)/24000, st.Latency, st.Truncations, st.Errors)
	t.Logf("events: %v", st.Events)

	shot := tab.screenshot(t, ctx)
	path := filepath.Join(t.ArtifactDir(), "page.png")
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)

	if st.Phase != "open" || !strings.HasPrefix(st.SessionID, "sess_") {
		t.Errorf("phase %q, session %q: want open with a session id", st.Phase, st.SessionID)
	}
	for _, ev := range []string{"session.created", "session.updated", "input_audio_buffer.speech_started",
		"input_audio_buffer.speech_stopped", "input_audio_buffer.committed", "conversation.item.input_audio_transcription.completed",
		"response.created", "response.output_audio.delta", "response.output_audio_transcript.delta"} {
		if st.Events[ev] == 0 {
			t.Errorf("the page received no %s", ev)
		}
	}
	if st.SentAppends < 25 || st.Received == 0 {
		t.Errorf("%d appends sent, %d samples received: want ≥ 25 (1 s) and some", st.SentAppends, st.Received)
	}
	if len(st.Latency["stopToAudio"]) == 0 || len(st.Latency["stopToTranscript"]) == 0 {
		t.Errorf("latency figures %v: want stop→audio and stop→transcript", st.Latency)
	}
	for _, e := range st.Errors {
		t.Errorf("the page shows an error: %s — %s", e.Code, e.Message)
	}
	if csp := tab.eval(t, ctx, `JSON.stringify(window.__csp)`); csp != "[]" {
		t.Errorf("CSP violations: %s", csp)
	}
	// The transcript panel holds both sides.
	if n := tab.eval(t, ctx, `String(document.querySelectorAll("#transcript li.user").length) + " " + String(document.querySelectorAll("#transcript li.assistant").length)`); strings.HasPrefix(n, "0") || strings.HasSuffix(n, " 0") {
		t.Errorf("transcript lines (user assistant): %s", n)
	}
	for _, l := range b.problems() {
		t.Errorf("browser: %s", l)
	}

	// Hang up: the page closes the socket normally.
	tab.eval(t, ctx, `document.getElementById("hangup").click(); window.voicedPage.phase`)
}

// chromiumPath finds Debian's chromium (scripts/install-deps.sh --test installs it).
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("chromium is not installed (scripts/install-deps.sh --test installs it): the browser page is not tested end to end")
	return ""
}

// speechWAV is espeak-ng saying text at 48 kHz (a microphone's rate), with half a second of
// silence before and 1.5 s after, so the turn detector hears the speech end.
func speechWAV(t *testing.T, text string) string {
	t.Helper()
	bin, err := exec.LookPath("espeak-ng")
	if err != nil {
		t.Skip("espeak-ng is not installed (scripts/install-deps.sh installs it)")
	}
	dir := t.TempDir()
	raw := filepath.Join(dir, "espeak.wav")
	if out, err := exec.Command(bin, "-v", "en-us", "-w", raw, text).CombinedOutput(); err != nil {
		t.Fatalf("espeak-ng: %v: %s", err, out)
	}
	b, err := os.ReadFile(raw)
	if err != nil {
		t.Fatal(err)
	}
	pcm, rate, err := audio.DecodeWAVBytes(b)
	if err != nil {
		t.Fatalf("espeak-ng WAV: %v", err)
	}
	speech := audio.Float32ToInt16(audio.Resample(pcm, rate, 48000))
	all := append(append(make([]int16, 24000), speech...), make([]int16, 72000)...)
	var w bytes.Buffer
	if err := audio.EncodeWAV(&w, all, 48000); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "speech-48k.wav")
	if err := os.WriteFile(out, w.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// ---- a small DevTools protocol client ----

// chromium is one headless browser process and its DevTools socket. The reader goroutine owns
// the socket's reads; call waits for its answer on a channel.
type chromium struct {
	cmd     *exec.Cmd
	conn    *websocket.Conn
	exited  chan struct{}
	readErr chan error

	mu      sync.Mutex
	next    int64
	pending map[int64]chan cdpMessage
	logs    []string // console errors, exceptions, security reports
}

type cdpMessage struct {
	ID        int64           `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

var devtoolsURL = regexp.MustCompile(`DevTools listening on (ws://\S+)`)

func startChromium(t *testing.T, ctx context.Context, bin string, extra ...string) *chromium {
	t.Helper()
	profile := t.TempDir()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + profile, "--remote-debugging-port=0"}, extra...)
	cmd := exec.Command(bin, append(args, "about:blank")...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its helpers share its group: one kill ends all
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	b := &chromium{cmd: cmd, exited: make(chan struct{}), readErr: make(chan error, 1), pending: map[int64]chan cdpMessage{}}
	found := make(chan string, 1)
	var early strings.Builder
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := devtoolsURL.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			} else if early.Len() < 8192 {
				early.WriteString(sc.Text() + "\n")
			}
		}
		cmd.Wait()
		close(b.exited)
	}()
	t.Cleanup(b.close)

	var url string
	select {
	case url = <-found:
	case <-b.exited:
		t.Fatalf("chromium exited before DevTools listened:\n%s", early.String())
	case <-ctx.Done():
		t.Fatal("chromium did not start DevTools in time")
	}
	b.conn, _, err = websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatalf("dial DevTools %s: %v", url, err)
	}
	b.conn.SetReadLimit(64 << 20) // screenshots
	go b.read()
	return b
}

func (b *chromium) read() {
	for {
		_, data, err := b.conn.Read(context.Background())
		if err != nil {
			b.mu.Lock()
			for id, c := range b.pending {
				close(c)
				delete(b.pending, id)
			}
			b.mu.Unlock()
			b.readErr <- err
			return
		}
		var m cdpMessage
		if json.Unmarshal(data, &m) != nil {
			continue
		}
		b.mu.Lock()
		if m.ID != 0 {
			if c, ok := b.pending[m.ID]; ok {
				c <- m
				delete(b.pending, m.ID)
			}
		} else if l := problem(m); l != "" {
			b.logs = append(b.logs, l)
		}
		b.mu.Unlock()
	}
}

// problem turns a console error, an uncaught exception or a security report into a line.
func problem(m cdpMessage) string {
	switch m.Method {
	case "Runtime.exceptionThrown":
		var p struct {
			ExceptionDetails struct {
				Text      string `json:"text"`
				Exception struct {
					Description string `json:"description"`
				} `json:"exception"`
			} `json:"exceptionDetails"`
		}
		json.Unmarshal(m.Params, &p)
		return "uncaught: " + p.ExceptionDetails.Text + " " + p.ExceptionDetails.Exception.Description
	case "Log.entryAdded":
		var p struct {
			Entry struct{ Source, Level, Text, URL string } `json:"entry"`
		}
		json.Unmarshal(m.Params, &p)
		if p.Entry.Level == "error" || p.Entry.Source == "security" {
			return fmt.Sprintf("%s %s: %s %s", p.Entry.Source, p.Entry.Level, p.Entry.Text, p.Entry.URL)
		}
	case "Runtime.consoleAPICalled":
		var p struct {
			Type string            `json:"type"`
			Args []json.RawMessage `json:"args"`
		}
		json.Unmarshal(m.Params, &p)
		if p.Type == "error" || p.Type == "assert" {
			return "console." + p.Type + ": " + string(bytes.Join(toBytes(p.Args), []byte(" ")))
		}
	}
	return ""
}

func toBytes(rs []json.RawMessage) [][]byte {
	out := make([][]byte, len(rs))
	for i, r := range rs {
		out[i] = r
	}
	return out
}

func (b *chromium) problems() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.logs...)
}

func (b *chromium) send(ctx context.Context, sessionID, method string, params any) (json.RawMessage, error) {
	if params == nil {
		params = map[string]any{}
	}
	p, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	reply := make(chan cdpMessage, 1)
	b.mu.Lock()
	b.next++
	id := b.next
	b.pending[id] = reply
	b.mu.Unlock()
	msg, _ := json.Marshal(cdpMessage{ID: id, Method: method, SessionID: sessionID, Params: p})
	if err := b.conn.Write(ctx, websocket.MessageText, msg); err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	select {
	case m, ok := <-reply:
		if !ok {
			return nil, fmt.Errorf("%s: the DevTools socket closed", method)
		}
		if m.Error != nil {
			return nil, fmt.Errorf("%s: %d %s", method, m.Error.Code, m.Error.Message)
		}
		return m.Result, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// close asks the browser to quit, then ends its process group if it does not.
func (b *chromium) close() {
	if b.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		b.send(ctx, "", "Browser.close", nil)
		cancel()
	}
	select {
	case <-b.exited:
	case <-time.After(10 * time.Second):
		syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
		<-b.exited
	}
	// Helpers that outlived the browser (its group, which this test started) go too.
	syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
	if b.conn != nil {
		b.conn.CloseNow()
		<-b.readErr // the reader has returned

	}
}

type tab struct {
	b         *chromium
	sessionID string
}

func (b *chromium) newTab(t *testing.T, ctx context.Context) *tab {
	t.Helper()
	res, err := b.send(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"})
	if err != nil {
		t.Fatal(err)
	}
	var target struct {
		TargetID string `json:"targetId"`
	}
	json.Unmarshal(res, &target)
	res, err = b.send(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true})
	if err != nil {
		t.Fatal(err)
	}
	var att struct {
		SessionID string `json:"sessionId"`
	}
	json.Unmarshal(res, &att)
	return &tab{b: b, sessionID: att.SessionID}
}

func (p *tab) call(t *testing.T, ctx context.Context, method string, params, result any) {
	t.Helper()
	res, err := p.b.send(ctx, p.sessionID, method, params)
	if err != nil {
		t.Fatal(err)
	}
	if result != nil {
		if err := json.Unmarshal(res, result); err != nil {
			t.Fatalf("%s: %v", method, err)
		}
	}
}

// eval runs expression in the page as a user gesture, awaits a promise, and returns the value
// as a string (JSON for objects).
func (p *tab) eval(t *testing.T, ctx context.Context, expression string) string {
	t.Helper()
	var r struct {
		Result struct {
			Type  string          `json:"type"`
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	p.call(t, ctx, "Runtime.evaluate", map[string]any{"expression": expression, "awaitPromise": true,
		"userGesture": true, "returnByValue": true}, &r)
	if r.ExceptionDetails != nil {
		t.Fatalf("page threw: %s %s", r.ExceptionDetails.Text, r.ExceptionDetails.Exception.Description)
	}
	var s string
	if json.Unmarshal(r.Result.Value, &s) == nil {
		return s
	}
	return string(r.Result.Value)
}

func (p *tab) screenshot(t *testing.T, ctx context.Context) []byte {
	t.Helper()
	var r struct {
		Data string `json:"data"`
	}
	p.call(t, ctx, "Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true}, &r)
	png, err := base64.StdEncoding.DecodeString(r.Data)
	if err != nil {
		t.Fatal(err)
	}
	return png
}
