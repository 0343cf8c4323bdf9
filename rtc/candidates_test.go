package rtc

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/sdp/v3"

	"github.com/voiced/voiced/internal/testkit"
)

// stunSink is a UDP socket on the loopback that counts the STUN packets it receives (the
// connectivity checks the server sends to a candidate naming it).
type stunSink struct {
	conn    net.PacketConn
	packets atomic.Int64
	done    chan struct{}
}

func newSTUNSink(t *testing.T) *stunSink {
	t.Helper()
	conn, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &stunSink{conn: conn, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		buf := make([]byte, 1500)
		for {
			n, _, err := conn.ReadFrom(buf)
			if err != nil {
				return
			}
			// A STUN message: the two top bits zero and the magic cookie (RFC 5389).
			if n >= 20 && buf[0]&0xc0 == 0 && binary.BigEndian.Uint32(buf[4:8]) == 0x2112A442 {
				s.packets.Add(1)
			}
		}
	}()
	t.Cleanup(func() { conn.Close(); <-s.done })
	return s
}

// newSTUNSinks is n sinks.
func newSTUNSinks(t *testing.T, n int) []*stunSink {
	t.Helper()
	sinks := make([]*stunSink, n)
	for i := range sinks {
		sinks[i] = newSTUNSink(t)
	}
	return sinks
}

func (s *stunSink) port() int { return s.conn.LocalAddr().(*net.UDPAddr).Port }

// withCandidates replaces the offer's candidates with n host candidates in its first m-line (the
// one pion takes its remote candidates from): the i-th names 127.0.0.1 at
// ports[i%len(ports)]+i/len(ports).
func withCandidates(t *testing.T, offer string, n int, ports []int) string {
	t.Helper()
	var d sdp.SessionDescription
	if err := d.UnmarshalString(offer); err != nil {
		t.Fatal(err)
	}
	for _, m := range d.MediaDescriptions {
		kept := m.Attributes[:0]
		for _, a := range m.Attributes {
			if !a.IsICECandidate() && a.Key != "end-of-candidates" {
				kept = append(kept, a)
			}
		}
		m.Attributes = kept
	}
	m := d.MediaDescriptions[0]
	for i := range n {
		port := ports[i%len(ports)] + i/len(ports)
		m.Attributes = append(m.Attributes, sdp.NewAttribute("candidate",
			fmt.Sprintf("%d 1 udp %d 127.0.0.1 %d typ host", 1000+i, 2113937151-i, port)))
	}
	b, err := d.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func sinkPorts(sinks []*stunSink) []int {
	ports := make([]int, len(sinks))
	for i, s := range sinks {
		ports[i] = s.port()
	}
	return ports
}

func stunReceived(sinks []*stunSink) int64 {
	var n int64
	for _, s := range sinks {
		n += s.packets.Load()
	}
	return n
}

// TestOfferCandidatesBounded: an offer with 2,000 candidates (the repro that made the server send
// ~15,000 STUN packets in 5 s) is refused by name, and no packet reaches the addresses it names.
func TestOfferCandidatesBounded(t *testing.T) {
	testkit.CheckLeaks(t)
	ep, err := NewEndpoint(Config{PrivateCandidates: CandidatesAllow, ConnectTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	sinks := newSTUNSinks(t, 16)
	cl := newClient(t)
	defer cl.close()
	base := cl.offer(t)
	offer := withCandidates(t, base, 2000, sinkPorts(sinks))
	if err := ValidateOffer(offer); !errors.Is(err, ErrTooManyCandidates) {
		t.Errorf("ValidateOffer: %v, want ErrTooManyCandidates", err)
	}
	_, call, err := ep.Answer(context.Background(), offer, Handlers{})
	if err == nil {
		defer call.Close()
	}
	if !errors.Is(err, ErrTooManyCandidates) {
		t.Errorf("Answer: %v, want ErrTooManyCandidates", err)
	}
	time.Sleep(time.Second) // the window in which packets are counted
	if n := stunReceived(sinks); n != 0 {
		t.Errorf("%d STUN packets reached the offer's candidates, want 0", n)
	}
	// At the bound the offer is answered.
	if err := ValidateOffer(withCandidates(t, base, MaxRemoteCandidates, sinkPorts(sinks))); err != nil {
		t.Errorf("an offer with %d candidates: %v", MaxRemoteCandidates, err)
	}
}

// TestOfferPrivateCandidatesRefused: with CandidatesRefusePrivate, candidates naming the loopback
// get no packet at all; the same offer with CandidatesAllow has them checked.
func TestOfferPrivateCandidatesRefused(t *testing.T) {
	testkit.CheckLeaks(t)
	for _, tc := range []struct {
		policy  CandidatePolicy
		checked bool
	}{
		{CandidatesRefusePrivate, false},
		{CandidatesAllow, true},
	} {
		t.Run(tc.policy.String(), func(t *testing.T) {
			ep, err := NewEndpoint(Config{PrivateCandidates: tc.policy, ConnectTimeout: 3 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer ep.Close()
			sinks := newSTUNSinks(t, 8)
			cl := newClient(t)
			defer cl.close()
			offer := withCandidates(t, cl.offer(t), len(sinks), sinkPorts(sinks))
			_, call, err := ep.Answer(context.Background(), offer, Handlers{})
			if err != nil {
				t.Fatal(err)
			}
			defer call.Close()
			if got := strings.Contains(call.pc.RemoteDescription().SDP, "a=candidate:"); got != tc.checked {
				t.Errorf("the offer pion was given has candidates: %v, want %v", got, tc.checked)
			}
			// Checks start within milliseconds; wait for them, or a second where none may come.
			deadline := time.Now().Add(time.Second)
			for stunReceived(sinks) == 0 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond) // polling a counter
			}
			if n := stunReceived(sinks); (n > 0) != tc.checked {
				t.Errorf("%d STUN packets reached the loopback candidates (want them checked: %v)", n, tc.checked)
			}
		})
	}
}

func TestPublicAddr(t *testing.T) {
	for addr, public := range map[string]bool{
		"1.1.1.1": true, "2606:4700:4700::1111": true, "::ffff:1.1.1.1": true,
		"127.0.0.1": false, "::1": false, "10.1.2.3": false, "172.16.0.1": false, "192.168.1.1": false,
		"169.254.169.254": false, "fe80::1": false, "fd00::2": false, "100.64.0.1": false,
		"0.0.0.0": false, "::": false, "224.0.0.1": false, "192.0.2.2": false, "2001:db8::1": false,
		"198.18.0.1": false, "255.255.255.255": false,
	} {
		if got := publicAddr(netip.MustParseAddr(addr)); got != public {
			t.Errorf("publicAddr(%s) = %v, want %v", addr, got, public)
		}
	}
	ifaces := func(addrs ...string) func() ([]net.Addr, error) {
		return func() ([]net.Addr, error) {
			var out []net.Addr
			for _, a := range addrs {
				p := netip.MustParsePrefix(a)
				out = append(out, &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())})
			}
			return out, nil
		}
	}
	for _, tc := range []struct {
		name       string
		advertised []string
		ifaces     func() ([]net.Addr, error)
		want       bool
	}{
		{"loopback box", nil, ifaces("127.0.0.1/8", "::1/128"), false},
		{"private LAN and documentation", nil, ifaces("127.0.0.1/8", "192.168.1.5/24", "192.0.2.2/24", "fe80::1/64"), false},
		{"public interface", nil, ifaces("127.0.0.1/8", "1.2.3.4/24"), true},
		{"NAT 1:1 public IP", []string{"1.2.3.4"}, ifaces("10.0.0.5/8"), true},
		{"NAT 1:1 private IP", []string{"10.0.0.5"}, ifaces("10.0.0.5/8"), false},
	} {
		if got := hasPublicAddress(tc.advertised, tc.ifaces); got != tc.want {
			t.Errorf("%s: hasPublicAddress = %v, want %v", tc.name, got, tc.want)
		}
	}
}
