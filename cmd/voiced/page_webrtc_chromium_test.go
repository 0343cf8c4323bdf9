package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voiced/voiced/internal/testkit"
)

// TestPageWebRTCInChromium holds a spoken turn through the page over WebRTC (its default
// transport) in headless Chromium: the fake microphone (espeak-ng speech) goes out on the page's
// Opus track, events come on its "oai-events" data channel, and the echo mind's spoken answer
// arrives on the server's track — the page hears output_audio_buffer.started and the remote
// track's inbound-rtp counts decoded sound (totalAudioEnergy > 0). Hanging up closes the peer
// connection, and the server ends the call (its DELETE then answers 404 call_not_found).
func TestPageWebRTCInChromium(t *testing.T) {
	browser := chromiumPath(t)
	mount := writeFixtureMount(t)
	wav, _ := speechWAV(t, "Hello there. What is the weather like today?")

	srv, secret := pageServer(t, mount, "page-webrtc-test-principal-secret-0123456789")
	base := "http://" + srv.addr

	signed := testkit.JWT(t, secret, map[string]any{"sub": "page-webrtc-tester", "exp": time.Now().Add(10 * time.Minute)})

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b := startChromium(t, ctx, browser, append(fakeMedia(wav),
		"--allow-loopback-in-peer-connection", "--disable-features=WebRtcHideLocalIpsWithMdns")...)
	tab := b.newTab(t, ctx)
	tab.call(t, ctx, "Page.enable", nil, nil)
	tab.call(t, ctx, "Runtime.enable", nil, nil)
	tab.call(t, ctx, "Log.enable", nil, nil)
	tab.call(t, ctx, "Page.addScriptToEvaluateOnNewDocument", map[string]any{"source": `
		window.__csp = [];
		document.addEventListener("securitypolicyviolation", (e) => window.__csp.push(e.violatedDirective + " " + e.blockedURI));`}, nil)
	tab.call(t, ctx, "Page.navigate", map[string]any{"url": base + "/"}, nil)
	tab.eval(t, ctx, `new Promise((ok) => document.readyState === "complete" ? ok() : addEventListener("load", () => ok()))`)

	if tr := tab.eval(t, ctx, `document.getElementById("transport").value`); tr != "webrtc" {
		t.Errorf("the page's default transport is %q, want webrtc", tr)
	}
	tab.eval(t, ctx, fmt.Sprintf(`document.getElementById("credential").value = %q; document.getElementById("connect").click();`, signed))

	// A turn: speech heard and transcribed, the answer done and heard on the remote track. Then a
	// barge-in: a server on the call's sideband asks for a long answer (the echo mind's reply to a
	// long text item: far longer than the looped file's ~5 s period), so the looped question's
	// next speech_started comes while it plays; the server clears the track
	// (output_audio_buffer.cleared) and the page measures when the received sound stops
	// (audioStopped).
	turnDone := tab.eval(t, ctx, `new Promise((ok) => {
		const t0 = Date.now();
		(function poll() {
			const s = window.voicedPage;
			const turn = s.events["session.created"] && s.events["session.updated"] &&
				s.events["input_audio_buffer.speech_started"] && s.events["conversation.item.input_audio_transcription.completed"] &&
				s.events["response.done"] && s.events["output_audio_buffer.stopped"] &&
				s.inbound && s.inbound.packets > 0 && s.inbound.energy > 0;
			if (turn) return ok(s.callId || "");
			if (s.phase === "failed" || s.phase === "closed" || Date.now() - t0 > 90000) return ok("");
			setTimeout(poll, 100);
		})();
	})`)
	if turnDone != "" {
		longAnswer(t, ctx, srv.addr, turnDone)
	}
	summary := tab.eval(t, ctx, `new Promise((ok) => {
		const t0 = Date.now();
		(function poll() {
			const s = window.voicedPage;
			if ((s.audioStopped.length > 0 && s.rtpStopped.length > 0) || s.phase !== "open" || Date.now() - t0 > 30000) return ok(JSON.stringify(s));
			setTimeout(poll, 100);
		})();
	})`)
	var st struct {
		Phase     string
		Transport string
		SessionID string
		CallID    string
		Events    map[string]int
		Inbound   *struct {
			Bytes, Packets  int
			Energy, Seconds float64
		}
		BufferCleared []int
		AudioStopped  []int
		RtpStopped    []int
		SentAppends   int
		Errors        []struct{ Code, Message string }
		Latency       map[string][]float64
		Speech        []struct {
			StartMs int  `json:"start_ms"`
			EndMs   *int `json:"end_ms"`
		}
	}
	if err := json.Unmarshal([]byte(summary), &st); err != nil {
		t.Fatalf("page state %q: %v", summary, err)
	}
	t.Logf("page state: phase %s, transport %s, session %s, call %s, inbound %+v, latency %v, speech→cleared %v ms, speech→packets gone %v ms, speech→sound gone %v ms, errors %v",
		st.Phase, st.Transport, st.SessionID, st.CallID, st.Inbound, st.Latency, st.BufferCleared, st.RtpStopped, st.AudioStopped, st.Errors)
	t.Logf("events: %v", st.Events)

	if err := os.WriteFile(filepath.Join(t.ArtifactDir(), "page-webrtc.png"), tab.screenshot(t, ctx), 0o644); err != nil {
		t.Fatal(err)
	}
	if st.Phase != "open" || st.Transport != "webrtc" || !strings.HasPrefix(st.SessionID, "sess_") || st.CallID == "" {
		t.Errorf("phase %q, transport %q, session %q, call %q: want open over webrtc with a session and a call id",
			st.Phase, st.Transport, st.SessionID, st.CallID)
	}
	for _, ev := range []string{"session.created", "session.updated", "input_audio_buffer.speech_started",
		"input_audio_buffer.speech_stopped", "conversation.item.input_audio_transcription.completed",
		"response.created", "response.output_audio_transcript.delta", "response.done", "output_audio_buffer.started"} {
		if st.Events[ev] == 0 {
			t.Errorf("the page received no %s", ev)
		}
	}
	for _, ev := range []string{"response.output_audio.delta", "response.audio.delta"} {
		if st.Events[ev] != 0 {
			t.Errorf("the page received %d %s over WebRTC: audio belongs on the track", st.Events[ev], ev)
		}
	}
	if st.SentAppends != 0 {
		t.Errorf("the page sent %d input_audio_buffer.append over WebRTC: the microphone belongs on the track", st.SentAppends)
	}
	if st.Inbound == nil || st.Inbound.Packets == 0 || st.Inbound.Energy <= 0 {
		t.Errorf("remote track inbound-rtp %+v: want packets and sound (totalAudioEnergy > 0)", st.Inbound)
	}
	if len(st.Latency["stopToAudio"]) == 0 || len(st.Latency["stopToTranscript"]) == 0 {
		t.Errorf("latency figures %v: want stop→audio (buffer started) and stop→transcript", st.Latency)
	}
	// Barge-in over WebRTC, measured by the page on what Chromium played (getStats
	// totalAudioEnergy, polled every 20 ms, quiet = under 5% of the reply's rate for 300 ms):
	// generous here — one run measured 456 ms, which includes NetEq's concealment tail, the
	// stats' own update period and the polling; TestWebRTCBargeIn keeps the strict 100 ms on the
	// received packets. Without the cut the answer plays on for ~15 s and audioStopped stays empty.
	if len(st.BufferCleared) == 0 {
		t.Errorf("no output_audio_buffer.cleared after the second question's speech_started: no barge-in")
	}
	if len(st.AudioStopped) == 0 {
		t.Errorf("the page never heard the answer's sound stop after a barge-in (audioStopped empty)")
	} else if st.AudioStopped[0] > 1000 {
		t.Errorf("the answer's sound stopped %d ms after speech_started, want ≤ 1000", st.AudioStopped[0])
	}
	// The same cut on the received packets, before Chromium's jitter buffer (getStats bytes per
	// packet under 40% of the reply's, or none, for 200 ms; the poll's time, an upper bound). The
	// issue's aim is 100 ms; asserted loosely (polling and getStats under a loaded machine add to
	// it), the figure is logged and recorded in LLM.md.
	if len(st.RtpStopped) == 0 {
		t.Errorf("the page never saw the answer's packets stop after a barge-in (rtpStopped empty)")
	} else if st.RtpStopped[0] > 300 {
		t.Errorf("the answer's packets stopped %d ms after speech_started, want ≤ 300 (aim 100)", st.RtpStopped[0])
	}
	for _, e := range st.Errors {
		t.Errorf("the page shows an error: %s — %s", e.Code, e.Message)
	}
	if csp := tab.eval(t, ctx, `JSON.stringify(window.__csp)`); csp != "[]" {
		t.Errorf("CSP violations: %s", csp)
	}
	if n := tab.eval(t, ctx, `String(document.querySelectorAll("#transcript li.user").length) + " " + String(document.querySelectorAll("#transcript li.assistant").length)`); strings.HasPrefix(n, "0") || strings.HasSuffix(n, " 0") {
		t.Errorf("transcript lines (user assistant): %s", n)
	}
	for _, l := range b.problems() {
		t.Errorf("browser: %s", l)
	}

	// Hang up: the page closes its peer connection and the server ends the call.
	if phase := tab.eval(t, ctx, `document.getElementById("hangup").click(); window.voicedPage.phase`); phase != "idle" {
		t.Errorf("phase after hang up %q, want idle", phase)
	}
	// The call no longer counts (GET /health voice.busy back to 0), and no DELETE was needed.
	for {
		busy := voiceBusy(t, ctx, base)
		if busy == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the call is still held after the page hung up (/health voice.busy %d)", busy)
		case <-time.After(200 * time.Millisecond):
		}
	}
	if st.CallID == "" {
		return
	}
	req, _ := http.NewRequestWithContext(ctx, "DELETE", base+"/v1/realtime/calls/"+st.CallID, nil)
	req.Header.Set("Authorization", "Bearer service-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("DELETE the call after hang up: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("DELETE the call after the page hung up: %d, want 404 (already ended)", resp.StatusCode)
	}
}

// longAnswer asks, on the call's sideband socket (a server holding the call's conversation, as
// OpenAI offers it), for a reply of about 20 s: a long user text item, then response.create.
func longAnswer(t *testing.T, ctx context.Context, addr, callID string) {
	t.Helper()
	conn, _, err := websocket.Dial(ctx, "ws://"+addr+"/v1/realtime?call_id="+callID,
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer service-token"}}})
	if err != nil {
		t.Fatalf("sideband for %s: %v", callID, err)
	}
	defer conn.CloseNow()
	text := strings.Repeat("This answer goes on for a long while, so that you can speak over it. ", 12)
	item, _ := json.Marshal(map[string]any{"type": "conversation.item.create", "item": map[string]any{
		"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": text}}}})
	for _, ev := range [][]byte{item, []byte(`{"type":"response.create"}`)} {
		if err := conn.Write(ctx, websocket.MessageText, ev); err != nil {
			t.Fatalf("sideband write: %v", err)
		}
	}
	conn.Close(websocket.StatusNormalClosure, "")
}

// voiceBusy is GET /health's voice.busy: the conversations (sockets and calls) held now.
func voiceBusy(t *testing.T, ctx context.Context, base string) int {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/health", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET /health: %v", err)
	}
	defer resp.Body.Close()
	var h struct {
		Voice struct{ Busy int } `json:"voice"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatalf("GET /health: %v", err)
	}
	return h.Voice.Busy
}
