package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
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

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/internal/testkit"
	"github.com/voiced/voiced/wire"
)

// TestPageInChromium opens the page (WebSocket transport) in headless Chromium with a fake microphone that plays
// real speech (espeak-ng), against voiced on the fixture mount with the echo mind: the page
// must mint a ticket, open /v1/voice, stream the microphone, and play the spoken answer.
// Chromium is driven over the DevTools protocol; its console and CSP reports fail the test.
func TestPageInChromium(t *testing.T) {
	browser := chromiumPath(t)
	mount := writeFixtureMount(t)
	wav, spoken := speechWAV(t, "Hello there. What is the weather like today?")

	srv, secret := pageServer(t, mount, "page-test-principal-secret-0123456789abcdef")
	base := "http://" + srv.addr

	signed := testkit.JWT(t, secret, map[string]any{"sub": "page-tester", "exp": time.Now().Add(10 * time.Minute)})

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b := startChromium(t, ctx, browser, fakeMedia(wav)...)
	tab := b.newTab(t, ctx)
	tab.call(t, ctx, "Page.enable", nil, nil)
	tab.call(t, ctx, "Runtime.enable", nil, nil)
	tab.call(t, ctx, "Log.enable", nil, nil)
	tab.call(t, ctx, "Page.addScriptToEvaluateOnNewDocument", map[string]any{"source": `
		window.__csp = [];
		document.addEventListener("securitypolicyviolation", (e) => window.__csp.push(e.violatedDirective + " " + e.blockedURI));`}, nil)
	tab.call(t, ctx, "Page.navigate", map[string]any{"url": base + "/"}, nil)
	tab.eval(t, ctx, `new Promise((ok) => document.readyState === "complete" ? ok() : addEventListener("load", () => ok()))`)

	tab.eval(t, ctx, fmt.Sprintf(`document.getElementById("credential").value = %q;
		document.getElementById("transport").value = "websocket";
		document.getElementById("connect").click();`, signed))

	// A turn: the speech is heard, its end detected, the echo answer spoken and scheduled.
	summary := tab.eval(t, ctx, `new Promise((ok, fail) => {
		const t0 = Date.now();
		(function poll() {
			const s = window.voicedPage;
			const done = s.events["session.created"] && s.events["session.updated"] && s.sentAppends >= 25 &&
				s.events["input_audio_buffer.speech_stopped"] && s.events["response.created"] &&
				s.events["response.output_audio.delta"] && s.latency.stopToAudio.length > 0 &&
				s.speech.some((x) => x.start_ms >= 50 && x.end_ms !== null);
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
		Speech  []struct {
			StartMs int  `json:"start_ms"`
			EndMs   *int `json:"end_ms"`
		}
	}
	if err := json.Unmarshal([]byte(summary), &st); err != nil {
		t.Fatalf("page state %q: %v", summary, err)
	}
	t.Logf("page state: phase %s, session %s, %d appends (%.1f s), %.1f s received, latency %v, truncations %v, errors %v",
		st.Phase, st.SessionID, st.SentAppends, float64(st.SentSamples)/24000, float64(st.Received)/24000, st.Latency, st.Truncations, st.Errors)
	t.Logf("events: %v", st.Events)
	// The server's turn detector, on its own clock (samples it received), heard about as much speech
	// as espeak-ng said: wrong rates or lost chunks would stretch or shrink it.
	// A turn that starts after the first 50 ms was heard whole (the fake microphone loops the file
	// from when the page asked for it, so the socket may open in the middle of the speech).
	whole := -1
	for i, sp := range st.Speech {
		if sp.StartMs >= 50 && sp.EndMs != nil && whole < 0 {
			whole = i
		}
	}
	if whole < 0 {
		t.Errorf("no whole speech turn: %+v", st.Speech)
	} else {
		sp := st.Speech[whole]
		heard := time.Duration(*sp.EndMs-sp.StartMs) * time.Millisecond
		t.Logf("speech: espeak-ng said %v, the server heard %v (start %d ms, end %d ms)", spoken, heard, sp.StartMs, *sp.EndMs)
		if heard < spoken-300*time.Millisecond || heard > spoken+1200*time.Millisecond {
			t.Errorf("the server heard %v of speech, espeak-ng said %v", heard, spoken)
		}
	}

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

// speechWAV is espeak-ng saying text at 48 kHz (a microphone's rate), with a second of silence
// before and 1.5 s after, so the turn detector hears the speech end.
func speechWAV(t *testing.T, text string) (path string, speech time.Duration) {
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
	said := audio.Float32ToInt16(audio.Resample(pcm, rate, 48000))
	all := append(append(make([]int16, 48000), said...), make([]int16, 72000)...)
	var w bytes.Buffer
	if err := audio.EncodeWAV(&w, all, 48000); err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(dir, "speech-48k.wav")
	if err := os.WriteFile(path, w.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, audio.Duration(len(said), 48000)
}

// ---- a small DevTools protocol client ----

// chromium is one headless browser process and its DevTools socket. The reader goroutine owns
// the socket's reads; call waits for its answer on a channel.
type chromium struct {
	cmd     *exec.Cmd
	conn    *websocket.Conn
	exited  chan struct{}
	readErr chan error
	closed  sync.Once

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

// pageServer starts voiced on mount with the echo mind, the service token "service-token" and
// secret (returned) as the principals' JWT secret: the page tests' server.
func pageServer(t *testing.T, mount, secret string) (*server, []byte) {
	t.Helper()
	secretFile := filepath.Join(t.TempDir(), "jwt.secret")
	if err := os.WriteFile(secretFile, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	return startServer(t, append(baseEnv(t), "VOICED_TOKEN=service-token"),
		"--speech-assets", mount, "--jwt-secret-file", secretFile, "--mind", "echo"), []byte(secret)
}

// fakeMedia is Chromium's flags for a page test: the fake camera and a microphone playing wav,
// granted without a prompt, audio played without a gesture.
func fakeMedia(wav string) []string {
	return []string{"--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
		"--use-file-for-fake-audio-capture=" + wav, "--autoplay-policy=no-user-gesture-required", "--window-size=1000,1200"}
}

func startChromium(t *testing.T, ctx context.Context, bin string, extra ...string) *chromium {
	t.Helper()
	profile := t.TempDir()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--user-data-dir=" + profile, "--remote-debugging-port=0"}, extra...)
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

// close asks the browser to quit, then ends its process group if it does not. A test may close
// a browser before its cleanup does: only the first call acts (readErr holds one value).
func (b *chromium) close() { b.closed.Do(b.quit) }

func (b *chromium) quit() {
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

// The page's barge-in, against a scripted realtime server: while 3 s of an answer is playing,
// speech_started arrives (after 1 s of microphone audio, the page's own clock), and the page
// must stop playback and truncate the item at what it played — more than nothing, less than all.
// The script also checks the page's session.update and appends, and shows an error by code.
func TestPageBargeInInChromium(t *testing.T) {
	browser := chromiumPath(t)
	mux := pageMux(t)
	type truncate struct {
		Type         string `json:"type"`
		ItemID       string `json:"item_id"`
		ContentIndex int    `json:"content_index"`
		AudioEndMs   int    `json:"audio_end_ms"`
	}
	got := make(chan truncate, 1)
	closed := make(chan websocket.StatusCode, 1)
	failures := make(chan string, 16)
	fail := func(format string, args ...any) {
		select {
		case failures <- fmt.Sprintf(format, args...):
		default:
		}
	}
	mux.HandleFunc("POST /v1/voice/session", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer a.principal.jwt" {
			fail("POST /v1/voice/session: Authorization %q", r.Header.Get("Authorization"))
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ticket":"ek_scripted","expires_in":30,"rate":24000,"format":"pcm16","channels":1}`)
	})
	mux.HandleFunc("GET /v1/voice", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("ticket") != "ek_scripted" {
			fail("socket ticket %q", r.URL.Query().Get("ticket"))
		}
		conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"realtime"}})
		if err != nil {
			fail("accept: %v", err)
			return
		}
		defer conn.CloseNow()
		if conn.Subprotocol() != "realtime" {
			fail("subprotocol %q, want realtime", conn.Subprotocol())
		}
		conn.SetReadLimit(16 << 20)
		ctx := r.Context()
		write := func(ev string) {
			if err := conn.Write(ctx, websocket.MessageText, []byte(ev)); err != nil {
				fail("write: %v", err)
			}
		}
		read := func() map[string]any {
			_, b, err := conn.Read(ctx)
			if err != nil {
				closed <- websocket.CloseStatus(err)
				return nil
			}
			var ev map[string]any
			json.Unmarshal(b, &ev)
			if ev["type"] == "conversation.item.truncate" {
				var tr truncate
				json.Unmarshal(b, &tr)
				got <- tr
			}
			return ev
		}
		write(`{"type":"session.created","event_id":"e1","session":{"type":"realtime","id":"sess_scripted","audio":{"input":{"turn_detection":{"type":"semantic_vad"}},"output":{"voice":"am_adam"}}}}`)
		// The page's session.update, read by the server's own decoder, is what the form chose.
		_, frame, err := conn.Read(ctx)
		if err != nil {
			fail("read session.update: %v", err)
			return
		}
		ev, err := wire.Decode(frame, wire.GA)
		u, ok := ev.(*wire.SessionUpdate)
		if err != nil || !ok {
			fail("first client event %s: %v, want a GA session.update", frame, err)
			return
		}
		sess := wire.NewSession("sess_scripted", "")
		if err := sess.Apply(u); err != nil {
			fail("session.update %s: %v", frame, err)
		}
		pcm24k := wire.PCM16
		if sess.TurnDetection.Type != wire.TurnSemanticVAD || sess.Voice != "am_adam" || sess.Transcription == nil || sess.Transcription.Language != "es" ||
			sess.TextOnly || sess.InputFormat != pcm24k || sess.OutputFormat != pcm24k {
			fail("session after the page's update %s: %+v", frame, sess)
		}
		appends := 0
		for appends < 35 {
			ev := read()
			if ev == nil {
				fail("socket closed after %d appends", appends)
				return
			}
			if ev["type"] != "input_audio_buffer.append" {
				continue
			}
			if pcm, err := base64.StdEncoding.DecodeString(ev["audio"].(string)); err != nil || len(pcm) != 1920 {
				fail("append %d: %d bytes (%v), want 1920 (40 ms of pcm16 at 24 kHz)", appends, len(pcm), err)
			}
			appends++
			if appends == 10 { // the answer: 3 s of a tone, all at once, as a fast server sends it
				write(`{"type":"response.created","event_id":"e2","response":{"id":"resp_1","status":"in_progress","output":[]}}`)
				write(`{"type":"response.output_item.added","event_id":"e3","response_id":"resp_1","output_index":0,"item":{"id":"item_A","type":"message","role":"assistant","status":"in_progress","content":[]}}`)
				write(`{"type":"response.output_audio_transcript.delta","event_id":"e4","response_id":"resp_1","item_id":"item_A","output_index":0,"content_index":0,"delta":"A long answer."}`)
				tone := make([]int16, 2400)
				for i := range tone {
					tone[i] = int16(6000 * math.Sin(2*math.Pi*440*float64(i)/24000))
				}
				chunk := base64.StdEncoding.EncodeToString(audio.Int16ToBytes(tone))
				for i := range 30 {
					write(fmt.Sprintf(`{"type":"response.output_audio.delta","event_id":"d%d","response_id":"resp_1","item_id":"item_A","output_index":0,"content_index":0,"delta":%q}`, i, chunk))
				}
			}
		}
		write(`{"type":"input_audio_buffer.speech_started","event_id":"e5","audio_start_ms":1400,"item_id":"item_U"}`)
		var tr truncate
		for tr.Type == "" {
			if read() == nil {
				fail("socket closed before a truncate")
				return
			}
			select {
			case tr = <-got:
				got <- tr
			default:
			}
		}
		write(fmt.Sprintf(`{"type":"conversation.item.truncated","event_id":"e6","item_id":"item_A","content_index":0,"audio_end_ms":%d}`, tr.AudioEndMs))
		write(`{"type":"error","event_id":"e7","error":{"type":"invalid_request_error","code":"scripted_error","message":"shown by its code"}}`)
		for read() != nil {
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := startChromium(t, ctx, browser, "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
		"--autoplay-policy=no-user-gesture-required")
	tab := b.newTab(t, ctx)
	tab.call(t, ctx, "Runtime.enable", nil, nil)
	tab.call(t, ctx, "Log.enable", nil, nil)
	tab.call(t, ctx, "Page.navigate", map[string]any{"url": srv.URL + "/"}, nil)
	tab.eval(t, ctx, `new Promise((ok) => document.readyState === "complete" ? ok() : addEventListener("load", () => ok()))`)
	tab.eval(t, ctx, `document.getElementById("credential").value = "a.principal.jwt";
		document.getElementById("transport").value = "websocket";
		document.getElementById("vad").value = "semantic_vad";
		document.getElementById("language").value = "es";
		document.getElementById("language").dispatchEvent(new Event("change"));
		window.pickedVoice = document.getElementById("voice").value + " " + document.getElementById("voices").options.length;
		document.getElementById("voice").value = "am_adam";
		document.getElementById("connect").click();`)
	if picked := tab.eval(t, ctx, `window.pickedVoice`); picked != "ef_dora 4" {
		t.Errorf("picking Spanish offered %q, want ef_dora first of 3 Spanish voices + alloy", picked)
	}
	state := tab.eval(t, ctx, `new Promise((ok) => {
		const t0 = Date.now();
		(function poll() {
			const s = window.voicedPage;
			if (s.errors.some((e) => e.code === "scripted_error") || s.phase === "failed" || Date.now() - t0 > 60000) return ok(JSON.stringify(s));
			setTimeout(poll, 50);
		})();
	})`)
	note := tab.eval(t, ctx, `document.querySelector("#transcript li.assistant .note").textContent`)
	shown := tab.eval(t, ctx, `document.querySelector("#errors li").textContent`)
	if err := os.WriteFile(filepath.Join(t.ArtifactDir(), "barge-in.png"), tab.screenshot(t, ctx), 0o644); err != nil {
		t.Fatal(err)
	}
	tab.eval(t, ctx, `document.getElementById("hangup").click()`)

	select {
	case code := <-closed:
		if code != websocket.StatusNormalClosure {
			t.Errorf("hang up closed the socket with %v, want 1000", code)
		}
	case <-ctx.Done():
		t.Error("the socket was not closed after hang up")
	}
	close(failures)
	for f := range failures {
		t.Error("script: " + f)
	}
	select {
	case tr := <-got:
		t.Logf("truncate: %+v (1 s of microphone audio after 3 s of answer arrived)", tr)
		if tr.ItemID != "item_A" || tr.ContentIndex != 0 || tr.AudioEndMs < 300 || tr.AudioEndMs > 2800 {
			t.Errorf("truncate %+v: want item_A, content 0, audio_end_ms between 300 and 2800 (about 1 s played of 3 s)", tr)
		}
	default:
		t.Fatalf("the page sent no conversation.item.truncate; its state: %s", state)
	}
	if !strings.Contains(note, "interrupted") || !strings.Contains(shown, "scripted_error") || !strings.Contains(shown, "shown by its code") {
		t.Errorf("assistant line note %q, error shown %q", note, shown)
	}
	for _, l := range b.problems() {
		t.Errorf("browser: %s", l)
	}
}

// The capture worklet, run in Chromium's OfflineAudioContext on pure tones: what reaches the
// server is 24 kHz, at the level it came in, and a tone above 12 kHz does not alias into speech.
func TestPageCaptureResamplesInChromium(t *testing.T) {
	browser := chromiumPath(t)
	srv := httptest.NewServer(pageMux(t))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tab := startChromium(t, ctx, browser).newTab(t, ctx)
	tab.call(t, ctx, "Page.navigate", map[string]any{"url": srv.URL + "/"}, nil)
	tab.eval(t, ctx, `new Promise((ok) => document.readyState === "complete" ? ok() : addEventListener("load", () => ok()))`)
	tests := []struct {
		name         string
		rate, hz     int
		minDB, maxDB float64 // output level relative to input
	}{
		{"48 kHz, 440 Hz passes", 48000, 440, -0.1, 0.1},
		{"48 kHz, 7 kHz passes", 48000, 7000, -0.1, 0.1},
		{"48 kHz, 15 kHz is stopped", 48000, 15000, -200, -60},
		{"44.1 kHz, 1 kHz passes", 44100, 1000, -0.1, 0.1},
		{"44.1 kHz, 20 kHz is stopped", 44100, 20000, -200, -60},
		{"16 kHz, 1 kHz passes upsampled", 16000, 1000, -0.1, 0.1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := tab.eval(t, ctx, fmt.Sprintf(`(async () => {
				const c = new OfflineAudioContext(1, %[1]d, %[1]d);
				await c.audioWorklet.addModule(document.body.dataset.worklet);
				const n = new AudioWorkletNode(c, "voiced-capture", {numberOfInputs: 1, numberOfOutputs: 0,
					processorOptions: {rate: 24000, chunkSamples: 960}});
				const chunks = [];
				const all = new Promise((ok) => n.port.onmessage = (e) => { chunks.push(new Int16Array(e.data.pcm)); if (chunks.length === 24) ok(); });
				const o = c.createOscillator();
				o.frequency.value = %[2]d;
				const g = c.createGain();
				g.gain.value = 0.5;
				o.connect(g).connect(n);
				o.start();
				await c.startRendering();
				await all;
				const x = chunks.flatMap((c) => Array.from(c)).slice(2400);
				let ss = 0, crossings = 0;
				for (let i = 0; i < x.length; i++) {
					ss += (x[i] / 32768) ** 2;
					if (i && (x[i - 1] < 0) !== (x[i] < 0)) crossings++;
				}
				// All zeros (below one PCM16 step) is -Infinity, which JSON cannot carry.
				return JSON.stringify({db: ss > 0 ? 10 * Math.log10(ss / x.length / 0.125) : -200, hz: crossings / 2 / (x.length / 24000)});
			})()`, tc.rate, tc.hz))
			var r struct{ DB, Hz float64 }
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatalf("%s: %v", out, err)
			}
			if len(out) == 0 || r.DB < tc.minDB || r.DB > tc.maxDB {
				t.Errorf("level %.2f dB, want %.1f..%.1f", r.DB, tc.minDB, tc.maxDB)
			}
			if tc.maxDB > -1 && math.Abs(r.Hz-float64(tc.hz)) > 5 {
				t.Errorf("frequency %.1f Hz at 24 kHz, want %d: the rate is wrong", r.Hz, tc.hz)
			}
		})
	}
}
