package rtc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pion/sdp/v3"
	"github.com/pion/webrtc/v4"

	"github.com/voiced/voiced/session"
)

// TestPeerMaxMessage: the peer's a=max-message-size is read from its offer as pion's association
// reads it (absent or 0: 65535).
func TestPeerMaxMessage(t *testing.T) {
	for name, tc := range map[string]struct {
		attrs string
		want  int
	}{
		"chrome":                {"a=max-message-size:262144\r\n", 262144},
		"firefox":               {"a=max-message-size:1073741823\r\n", 1073741823},
		"absent":                {"", unsetPeerMessage},
		"zero":                  {"a=max-message-size:0\r\n", unsetPeerMessage},
		"not a number":          {"a=max-message-size:lots\r\n", unsetPeerMessage},
		"the first that parses": {"a=max-message-size:x\r\na=max-message-size:70000\r\n", 70000},
	} {
		t.Run(name, func(t *testing.T) {
			offer := "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n" +
				"m=audio 9 UDP/TLS/RTP/SAVPF 111\r\nc=IN IP4 0.0.0.0\r\na=max-message-size:5\r\na=rtpmap:111 opus/48000/2\r\n" +
				"m=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\nc=IN IP4 0.0.0.0\r\na=sctp-port:5000\r\n" + tc.attrs
			var d sdp.SessionDescription
			if err := d.UnmarshalString(offer); err != nil {
				t.Fatal(err)
			}
			if got := peerMaxMessage(&d); got != tc.want {
				t.Errorf("peerMaxMessage = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestCallServerEventTooLarge: a server event larger than the peer's a=max-message-size (65536,
// what RFC 8841 peers without the attribute take; 262144, Chrome's) reaches the peer as an
// event_too_large error naming it, and the call goes on carrying events; the limit read from the
// offer is the one pion's association enforces. Before: the data channel's send failed
// ("outbound packet larger than maximum message size") and the call ended.
func TestCallServerEventTooLarge(t *testing.T) {
	for _, peerMax := range []int{65536, 262144} {
		t.Run(fmt.Sprint(peerMax), func(t *testing.T) {
			leakCheck(t)
			ep, err := NewEndpoint(Config{})
			if err != nil {
				t.Fatal(err)
			}
			defer ep.Close()
			cl := newClientWith(t, func(se *webrtc.SettingEngine) { se.SetSCTPMaxMessageSize(uint32(peerMax)) })
			defer cl.close()
			tr := NewTransport()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			answer, call, err := ep.Answer(ctx, cl.offer(t), tr.Handlers())
			if err != nil {
				t.Fatal(err)
			}
			tr.Bind(call)
			defer tr.Close(session.EndNormal, "")
			if err := cl.pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: answer}); err != nil {
				t.Fatal(err)
			}
			<-cl.dcOpen
			if got := call.PeerMaxMessage(); got != peerMax {
				t.Errorf("PeerMaxMessage = %d, want the offer's %d", got, peerMax)
			}
			waitFor(t, func() bool { return call.pc.SCTP().GetCapabilities().MaxMessageSize != 0 })
			if enforced := int(call.pc.SCTP().GetCapabilities().MaxMessageSize); enforced != call.PeerMaxMessage() {
				t.Errorf("pion's association sends at most %d bytes, the call reads %d from the offer", enforced, call.PeerMaxMessage())
			}
			seen := make(chan []byte, 1)
			untap, _ := tr.Tap(func(ev []byte) {
				if len(ev) > peerMax {
					seen <- ev
				}
			})
			defer untap()

			big := []byte(`{"type":"conversation.item.created","item":{"text":"` + strings.Repeat("x", peerMax) + `"}}`)
			for _, ev := range [][]byte{big, []byte(`{"type":"after"}`)} {
				if err := tr.Send(ctx, ev); err != nil {
					t.Fatalf("Send: %v", err)
				}
			}
			next := func() map[string]any {
				t.Helper()
				select {
				case m := <-cl.msgs:
					var ev map[string]any
					if err := json.Unmarshal(m, &ev); err != nil {
						t.Fatalf("%q: %v", m, err)
					}
					return ev
				case <-call.Done():
					t.Fatalf("the call ended: %v", call.Err())
				case <-time.After(10 * time.Second):
					t.Fatal("nothing arrived")
				}
				return nil
			}
			ev := next()
			e, _ := ev["error"].(map[string]any)
			if ev["type"] != "error" || e["code"] != CodeEventTooLarge ||
				!strings.Contains(fmt.Sprint(e["message"]), "conversation.item.created") {
				t.Errorf("in place of the %d-byte event: %v", len(big), ev)
			}
			t.Logf("%v", e["message"])
			if ev := next(); ev["type"] != "after" {
				t.Errorf("the event after: %v", ev)
			}
			if got := <-seen; !bytes.Equal(got, big) {
				t.Errorf("the tap got %d bytes, want the event whole", len(got))
			}
			if n := counterValue(t, ep.metrics.tooLarge.WithLabelValues("out")); n != 1 {
				t.Errorf("voiced_webrtc_events_too_large_total{way=out} = %v, want 1", n)
			}
		})
	}
}
