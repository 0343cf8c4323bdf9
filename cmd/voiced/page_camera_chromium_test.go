package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/voiced/voiced/internal/testkit"
)

// TestPageCameraInChromium (issue 27): with the camera toggle on, the page sends Chromium's fake
// camera as a frame a second (input_video_buffer.append, on the WebSocket and on the WebRTC data
// channel), the server takes them (no error), and the echo mind, shown the newest frames with
// the next spoken turn, says it was shown images.
func TestPageCameraInChromium(t *testing.T) {
	browser := chromiumPath(t)
	mount := writeFixtureMount(t)
	wav, _ := speechWAV(t, "Hello there. What is the weather like today?")

	srv, secret := pageServer(t, mount, "page-camera-test-principal-secret-0123456789")
	base := "http://" + srv.addr
	for _, transport := range []string{"websocket", "webrtc"} {
		signed := testkit.JWT(t, secret, map[string]any{"sub": "page-camera-tester", "exp": time.Now().Add(10 * time.Minute)})
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		b := startChromium(t, ctx, browser, append(fakeMedia(wav),
			"--allow-loopback-in-peer-connection", "--disable-features=WebRtcHideLocalIpsWithMdns")...)
		tab := b.newTab(t, ctx)
		tab.call(t, ctx, "Page.enable", nil, nil)
		tab.call(t, ctx, "Runtime.enable", nil, nil)
		tab.call(t, ctx, "Page.navigate", map[string]any{"url": base + "/"}, nil)
		tab.eval(t, ctx, `new Promise((ok) => document.readyState === "complete" ? ok() : addEventListener("load", () => ok()))`)
		tab.eval(t, ctx, fmt.Sprintf(`document.getElementById("transport").value = %q; document.getElementById("camera").checked = true;
			document.getElementById("credential").value = %q; document.getElementById("connect").click();`, transport, signed))
		summary := tab.eval(t, ctx, `new Promise((ok) => {
			const t0 = Date.now();
			(function poll() {
				const s = window.voicedPage;
				const said = document.getElementById("transcript").innerText;
				if (/showed me/.test(said) || s.phase === "failed" || s.phase === "closed" || Date.now() - t0 > 90000) {
					return ok(JSON.stringify({state: s, said}));
				}
				setTimeout(poll, 200);
			})();
		})`)
		var st struct {
			State struct {
				Phase      string
				SentFrames int `json:"sentFrames"`
				Errors     []struct{ Code, Message string }
				Events     map[string]int
			}
			Said string
		}
		if err := json.Unmarshal([]byte(summary), &st); err != nil {
			t.Fatalf("%s: page state %q: %v", transport, summary, err)
		}
		t.Logf("%s: %d frames sent; said %q; errors %v", transport, st.State.SentFrames, st.Said, st.State.Errors)
		if st.State.SentFrames == 0 {
			t.Errorf("%s: the camera sent no frame", transport)
		}
		for _, e := range st.State.Errors {
			if strings.HasPrefix(e.Code, "video_frame") || e.Code == "camera_unavailable" {
				t.Errorf("%s: %s: %s", transport, e.Code, e.Message)
			}
		}
		if !strings.Contains(st.Said, "showed me") {
			t.Errorf("%s: the mind was not shown the camera's frames: %q", transport, st.Said)
		}
		tab.eval(t, ctx, `document.getElementById("hangup").click(); window.voicedPage.phase`)
		b.close()
		cancel()
	}
}
