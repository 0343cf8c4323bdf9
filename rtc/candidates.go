package rtc

import (
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/pion/sdp/v3"
)

// CandidatePolicy says whether an offer's ICE candidates may name private addresses. The server
// sends connectivity checks (STUN) to every remote candidate it keeps: on a host with a public
// address, a candidate naming 10.0.0.5 or 127.0.0.1 would aim those packets at the server's own
// network, where no browser on the internet can be.
type CandidatePolicy int

const (
	// CandidatesAuto (the zero value) refuses private targets when this host has a public
	// address (Config.PublicIPs, or an interface's) and allows them otherwise: a loopback or
	// private test box keeps working, a server on the internet is protected.
	CandidatesAuto CandidatePolicy = iota
	// CandidatesAllow keeps every candidate (a server serving its own private network).
	CandidatesAllow
	// CandidatesRefusePrivate drops, from each offer, candidates whose address is loopback,
	// private (RFC 1918, fc00::/7), link-local, unspecified, multicast or special-purpose
	// (shared, documentation, benchmarking, reserved: notGlobal), or not an IP address at all
	// (a hostname, an mDNS .local name).
	CandidatesRefusePrivate
)

func (p CandidatePolicy) String() string {
	switch p {
	case CandidatesAllow:
		return "allow"
	case CandidatesRefusePrivate:
		return "refuse"
	default:
		return "auto"
	}
}

// ParseCandidatePolicy reads "auto", "allow" or "refuse".
func ParseCandidatePolicy(s string) (CandidatePolicy, error) {
	for _, p := range []CandidatePolicy{CandidatesAuto, CandidatesAllow, CandidatesRefusePrivate} {
		if s == p.String() {
			return p, nil
		}
	}
	return 0, fmt.Errorf("%w: candidate policy %q: want auto, allow or refuse", ErrConfig, s)
}

// notGlobal are the special-purpose ranges (IANA's registries) that netip's IsGlobalUnicast
// and IsPrivate do not exclude and that no browser on the internet has: shared address space
// (carrier-grade NAT), IETF protocol assignments, documentation, benchmarking, reserved.
var notGlobal = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("2001:db8::/32"),
}

// publicAddr: an address a browser on the internet could have (global unicast, none of the
// private or special-purpose ranges).
func publicAddr(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsGlobalUnicast() || a.IsPrivate() {
		return false
	}
	for _, p := range notGlobal {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// hasPublicAddress reports whether any of the advertised IPs, or else of this host's interface
// addresses, is public.
func hasPublicAddress(advertised []string, interfaces func() ([]net.Addr, error)) bool {
	for _, s := range advertised {
		if a, err := netip.ParseAddr(s); err == nil && publicAddr(a) {
			return true
		}
	}
	addrs, err := interfaces()
	if err != nil {
		return false
	}
	for _, na := range addrs {
		if p, err := netip.ParsePrefix(na.String()); err == nil && publicAddr(p.Addr()) {
			return true
		}
	}
	return false
}

// candidateAddr is the connection address of an a=candidate value
// ("foundation component transport priority address port typ type ...").
func candidateAddr(value string) (netip.Addr, bool) {
	f := strings.Fields(value)
	if len(f) < 6 {
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(f[4])
	return a, err == nil
}

// dropPrivateCandidates removes the candidates CandidatesRefusePrivate refuses from d and
// reports how many it removed.
func dropPrivateCandidates(d *sdp.SessionDescription) int {
	dropped := 0
	for _, m := range d.MediaDescriptions {
		kept := m.Attributes[:0]
		for _, a := range m.Attributes {
			if a.IsICECandidate() {
				if addr, ok := candidateAddr(a.Value); !ok || !publicAddr(addr) {
					dropped++
					continue
				}
			}
			kept = append(kept, a)
		}
		m.Attributes = kept
	}
	return dropped
}
