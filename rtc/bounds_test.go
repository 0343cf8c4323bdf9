package rtc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pion/rtp"
	"github.com/pion/sdp/v3"
	"github.com/pion/webrtc/v4"

	"github.com/voiced/voiced/audio/opus"
	"github.com/voiced/voiced/internal/testkit"
	"github.com/voiced/voiced/session"
)

// TestTransportInboundBytes: a peer that sends the largest messages faster than the
// conversation takes them has at most inboundBytes of them waiting in the transport (the
// data-channel reader waits, and SCTP's window stops the peer); nothing is dropped, and a
// sideband message larger than the whole budget still goes through, alone. Before: the queue
// counted inputs only, 64 × 256 KiB = 16 MiB per call (here all 20 messages, 5 MiB, waited).
func TestTransportInboundBytes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := NewTransport()
		const sent = 20
		msg := func(i int) []byte { return bytes.Repeat([]byte{'a' + byte(i)}, MaxEventMessage) }
		handed := make(chan struct{})
		go func() {
			defer close(handed)
			for i := range sent {
				tr.hand(session.Inbound{Event: msg(i)})
			}
		}()
		synctest.Wait() // the reader is blocked: the conversation takes nothing yet
		waiting := 0
		for _, q := range queuedOf(tr) {
			waiting += len(q.in.Event)
		}
		t.Logf("%d messages (%d bytes) wait for the conversation; the budget is %d", len(tr.in), waiting, inboundBytes)
		if waiting > inboundBytes {
			t.Errorf("%d bytes of events wait in the transport, want at most %d", waiting, inboundBytes)
		}
		for i := range sent {
			in, err := tr.Receive(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(in.Event, msg(i)) {
				t.Fatalf("message %d arrived as %d bytes of %q", i, len(in.Event), in.Event[:1])
			}
		}
		<-handed

		// Larger than the whole budget (a sideband reads up to session.ReadLimit): it waits for
		// the queue to empty, then goes alone.
		huge := make([]byte, 3*inboundBytes)
		tr.hand(session.Inbound{Audio: make([]float32, 480)})
		go tr.Inject(huge)
		synctest.Wait()
		if len(tr.in) != 1 {
			t.Errorf("%d inputs wait; want only the audio run while the huge message waits for room", len(tr.in))
		}
		for _, want := range []int{4 * 480, len(huge)} {
			in, err := tr.Receive(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got := inboundSize(in); got != want {
				t.Errorf("received %d bytes, want %d", got, want)
			}
		}
		if tr.budget.used != 0 {
			t.Errorf("the budget holds %d bytes with nothing waiting", tr.budget.used)
		}
	})
}

// queuedOf is what waits in the transport's queue (the test's goroutine alone reads it here).
func queuedOf(tr *Transport) []queued {
	var out []queued
	for range len(tr.in) {
		q := <-tr.in
		out = append(out, q)
	}
	for _, q := range out {
		tr.in <- q
	}
	return out
}

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
			testkit.CheckLeaks(t)
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

// TestCallFasterThanRealTime: a pion peer sends its mic's RTP four times faster than real time
// (a 20 ms packet every 5 ms, 12 s of audio in 3 s): the call decodes no more than real time
// since its first packet plus maxBurst, drops the rest undecoded, counts it and says so once at
// WARN. Before: all 12 s were decoded (and transcribed, turn-detected) as they came.
func TestCallFasterThanRealTime(t *testing.T) {
	testkit.CheckLeaks(t)
	logs := &testkit.LogBuffer{}
	mic, o, ep, done := rtpCall(t, Config{Log: slog.New(slog.NewTextHandler(logs, nil))})
	defer done()

	enc, err := opus.NewEncoder(32000)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	tone := make([]int16, opus.FrameSamples)
	for i := range tone {
		tone[i] = int16(8000 * ((i / 24) % 2)) // a 1 kHz square wave: not silence
	}
	pkt, err := enc.Encode(tone)
	if err != nil {
		t.Fatal(err)
	}
	const packets = 600 // 12 s of audio
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	first := time.Now()
	for i := range packets {
		<-tick.C
		if err := mic.WriteRTP(&rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: 111, SequenceNumber: uint16(7 + i),
			Timestamp: uint32(i * opus.FrameSamples), SSRC: 1}, Payload: pkt}); err != nil {
			t.Fatal(err)
		}
	}
	sentIn := time.Since(first)
	// Whatever arrives is decoded or dropped by now: wait for the heard audio to pass what was
	// sent's wall time, then bound it by the wall time since the first packet was sent (the
	// call's clock starts when it arrives, later).
	waitFor(t, func() bool { return o.heardSamples() >= int(sentIn.Seconds()*opus.SampleRate) })
	heard := o.heardSamples() // before the bound is taken: anything heard by then is within it
	bound := int((time.Since(first) + maxBurst).Seconds() * opus.SampleRate)
	t.Logf("sent %v of audio in %v; heard %.2f s (bound %.2f s); excess frames %v",
		time.Duration(packets)*frame, sentIn.Round(time.Millisecond), float64(heard)/opus.SampleRate,
		float64(bound)/opus.SampleRate, counterValue(t, ep.metrics.excess))
	if heard > bound {
		t.Errorf("heard %.2f s of mic audio within %v of the first packet, want at most real time + %v",
			float64(heard)/opus.SampleRate, time.Since(first).Round(time.Millisecond), maxBurst)
	}
	if counterValue(t, ep.metrics.excess) == 0 {
		t.Error("voiced_webrtc_inbound_excess_frames_total stayed 0")
	}
	if l := logs.String(); strings.Count(l, "level=WARN") != 1 || !strings.Contains(l, "faster than real time") {
		t.Errorf("want one WARN naming the excess; the log:\n%s", l)
	}
}

// TestInboundRealTime (fake clock): frames beyond real time since the first packet plus maxBurst
// are dropped undecoded (counted in excess); a sender in real time loses nothing, nor does one
// whose packets a 0.8 s network stall delivers at once.
func TestInboundRealTime(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for name, tc := range map[string]struct {
		arrive  func(i int) time.Duration // when packet i arrives
		packets int
		fills   []time.Duration // when the reader, idle, fills in silence
		decoded int             // packets decoded
	}{
		"real time": {func(i int) time.Duration { return time.Duration(i) * frame }, 200, nil, 200},
		// Packet i arrives at 5i ms: it is heard while (k+1) frames ≤ (5i ms + 1 s) / 20 ms.
		"4x": {func(i int) time.Duration { return time.Duration(i) * frame / 4 }, 400, nil, (399*5 + 1000) / 20},
		"a 0.8 s stall, then at once": {func(i int) time.Duration {
			if i >= 50 && i < 90 {
				return 1800 * time.Millisecond
			}
			return time.Duration(i) * frame
		}, 150, []time.Duration{1180 * time.Millisecond, 1380 * time.Millisecond, 1580 * time.Millisecond, 1780 * time.Millisecond}, 150},
	} {
		t.Run(name, func(t *testing.T) {
			in := newInbound()
			in.samples = func([]byte) (int, error) { return opus.FrameSamples, nil }
			decoded := 0
			count := func(steps []frameStep) {
				for _, s := range steps {
					if s.payload != nil {
						decoded++
					}
				}
			}
			fills := tc.fills
			for i := range tc.packets {
				at := tc.arrive(i)
				for len(fills) > 0 && fills[0] <= at {
					count(in.fill(t0.Add(fills[0])))
					fills = fills[1:]
				}
				count(in.push(&rtp.Packet{Header: rtp.Header{SequenceNumber: uint16(i), Timestamp: uint32(i * opus.FrameSamples)},
					Payload: []byte{1}}, t0.Add(at)))
			}
			if decoded != tc.decoded || in.excess != tc.packets-tc.decoded {
				t.Errorf("decoded %d of %d packets, %d excess; want %d decoded", decoded, tc.packets, in.excess, tc.decoded)
			}
		})
	}
}
