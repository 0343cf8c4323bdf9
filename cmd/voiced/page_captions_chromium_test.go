package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voiced/voiced/internal/testkit"
)

// TestPageCaptionsInChromium (issue 20 item 5): the page's captions mode opens a transcription
// session over WebRTC in headless Chromium with the fake microphone (espeak-ng speech): the
// session is of type transcription, each turn is detected and transcribed and shown with its
// start and end on the session's audio clock, and nothing answers (no response event, no reply
// audio on the track).
func TestPageCaptionsInChromium(t *testing.T) {
	browser := chromiumPath(t)
	mount := writeFixtureMount(t)
	wav, _ := speechWAV(t, "Hello there. What is the weather like today?")

	srv, secret := pageServer(t, mount, "page-captions-test-principal-secret-0123456789")
	base := "http://" + srv.addr
	signed := testkit.JWT(t, secret, map[string]any{"sub": "page-captions-tester", "exp": time.Now().Add(10 * time.Minute)})

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b := startChromium(t, ctx, browser, append(fakeMedia(wav),
		"--allow-loopback-in-peer-connection", "--disable-features=WebRtcHideLocalIpsWithMdns")...)
	tab := b.newTab(t, ctx)
	tab.call(t, ctx, "Page.enable", nil, nil)
	tab.call(t, ctx, "Runtime.enable", nil, nil)
	tab.call(t, ctx, "Page.navigate", map[string]any{"url": base + "/"}, nil)
	tab.eval(t, ctx, `new Promise((ok) => document.readyState === "complete" ? ok() : addEventListener("load", () => ok()))`)
	tab.eval(t, ctx, fmt.Sprintf(`document.getElementById("mode").value = "captions";
		document.getElementById("credential").value = %q; document.getElementById("connect").click();`, signed))

	// Two captions (the looped file's two sentences, or one sentence twice), then a second more
	// for anything that would answer them.
	summary := tab.eval(t, ctx, `new Promise((ok) => {
		const t0 = Date.now();
		let done = 0;
		(function poll() {
			const s = window.voicedPage;
			if (s.captions.length >= 2 && !done) done = Date.now();
			if ((done && Date.now() - done > 1000) || s.phase === "failed" || s.phase === "closed" || Date.now() - t0 > 90000) return ok(JSON.stringify(s));
			setTimeout(poll, 100);
		})();
	})`)
	var st struct {
		Phase, Transport, Mode, SessionType string
		Events                              map[string]int
		Inbound                             *struct {
			Packets int
			Energy  float64
		}
		Captions []struct {
			ItemID  string `json:"item_id"`
			StartMs *int   `json:"start_ms"`
			EndMs   *int   `json:"end_ms"`
			Text    string `json:"text"`
		}
		Errors []struct{ Code, Message string }
	}
	if err := json.Unmarshal([]byte(summary), &st); err != nil {
		t.Fatalf("page state %q: %v", summary, err)
	}
	t.Logf("captions: %+v; events %v", st.Captions, st.Events)
	if err := os.WriteFile(filepath.Join(t.ArtifactDir(), "page-captions.png"), tab.screenshot(t, ctx), 0o644); err != nil {
		t.Fatal(err)
	}
	if st.Phase != "open" || st.Transport != "webrtc" || st.Mode != "captions" || st.SessionType != "transcription" {
		t.Errorf("phase %q, transport %q, mode %q, session type %q: want an open transcription session over webrtc", st.Phase, st.Transport, st.Mode, st.SessionType)
	}
	if len(st.Captions) < 2 {
		t.Fatalf("captions: %+v", st.Captions)
	}
	last := -1
	for _, c := range st.Captions {
		if c.Text == "" || c.StartMs == nil || c.EndMs == nil || *c.EndMs <= *c.StartMs || *c.StartMs < last {
			t.Errorf("caption %+v: want text and times in order", c)
		}
		if c.EndMs != nil {
			last = *c.EndMs
		}
	}
	for ev, n := range st.Events {
		if strings.HasPrefix(ev, "response.") || strings.HasPrefix(ev, "output_audio_buffer.") {
			t.Errorf("a transcription session answered: %d %s", n, ev)
		}
	}
	if st.Inbound != nil && st.Inbound.Energy > 0 {
		t.Errorf("sound arrived on the call's track: %+v", st.Inbound)
	}
	for _, e := range st.Errors {
		t.Errorf("the page shows an error: %s — %s", e.Code, e.Message)
	}
	if n := tab.eval(t, ctx, `String(document.querySelectorAll("#transcript li.user .note").length ? [...document.querySelectorAll("#transcript li.user .note")].filter((n) => /\[\d/.test(n.textContent)).length : 0)`); n == "0" {
		t.Errorf("no caption line shows its times")
	}
	tab.eval(t, ctx, `document.getElementById("hangup").click(); window.voicedPage.phase`)
}
