package rtc

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/webrtc/v4"

	"github.com/voiced/voiced/internal/testkit"
)

// blackhole is a client's UDP socket that can go dead: a killed browser or a network gone, with
// no close of anything. Once dead, every packet either way is dropped.
type blackhole struct {
	net.PacketConn
	dead atomic.Bool
}

func (b *blackhole) ReadFrom(p []byte) (int, net.Addr, error) {
	for {
		n, a, err := b.PacketConn.ReadFrom(p)
		if err != nil || !b.dead.Load() {
			return n, a, err
		}
	}
}

func (b *blackhole) WriteTo(p []byte, a net.Addr) (int, error) {
	if b.dead.Load() {
		return len(p), nil
	}
	return b.PacketConn.WriteTo(p, a)
}

// TestCallPlayedStopsWithThePeer: a reply is playing when the peer goes — killed (its socket
// goes dead) or closing its PeerConnection without a hang-up. What the call counts as played
// (what the session bills) stays within 0.5 s of what the peer received, plus, for the killed
// peer, the DisconnectedTimeout it takes ICE to notice. Before: played ran on into the void
// until ICE failed (DisconnectedTimeout + FailedTimeout).
func TestCallPlayedStopsWithThePeer(t *testing.T) {
	const disconnected, failed = time.Second, 3 * time.Second
	for _, tc := range []struct {
		name  string
		grace time.Duration // how long the call may play after the peer went
	}{
		{"killed", disconnected + 500*time.Millisecond},
		{"closed without hang-up", 500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testkit.CheckLeaks(t)
			conn, err := net.ListenPacket("udp4", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			hole := &blackhole{PacketConn: conn}
			mux := ice.NewUDPMuxDefault(ice.UDPMuxParams{UDPConn: hole})
			defer mux.Close()
			ep, err := NewEndpoint(Config{DisconnectedTimeout: disconnected, FailedTimeout: failed})
			if err != nil {
				t.Fatal(err)
			}
			defer ep.Close()
			cl := newClientWith(t, func(se *webrtc.SettingEngine) { se.SetICEUDPMux(mux) })
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			answer, call, err := ep.Answer(ctx, cl.offer(t), Handlers{})
			if err != nil {
				t.Fatal(err)
			}
			defer call.Close()
			if err := cl.pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: answer}); err != nil {
				t.Fatal(err)
			}
			<-cl.dcOpen
			playing := make(chan error, 1)
			go func() { playing <- call.Play(context.Background(), make([]float32, 10*OutputRate)) }() // 10 s, 2 s queued at a time
			waitFor(t, func() bool {
				cl.mu.Lock()
				defer cl.mu.Unlock()
				return cl.packets >= 50 // 1 s heard
			})
			cl.mu.Lock()
			if tc.name == "killed" {
				hole.dead.Store(true)
			}
			received := cl.packets
			cl.mu.Unlock()
			if tc.name != "killed" {
				cl.pc.Close()
				cl.mu.Lock()
				received = cl.packets
				cl.mu.Unlock()
			}
			<-call.Done()
			<-playing
			cl.close()
			extra := time.Duration(call.Played()-int64(received*outFrame)) * time.Second / OutputRate
			t.Logf("received %d packets (%v); played %v more", received, time.Duration(received)*frame, extra)
			if extra > tc.grace {
				t.Errorf("played %v after the peer went, want at most %v", extra, tc.grace)
			}
		})
	}
}
