package rtc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/interceptor"
	"github.com/pion/webrtc/v4"
)

// Config is an Endpoint's network and timing. The zero value works on localhost.
type Config struct {
	// PortMin..PortMax is the UDP port range for ICE (0, 0 = any ephemeral port).
	PortMin, PortMax uint16
	// PublicIPs are advertised as host candidates instead of the local ones (NAT 1:1).
	PublicIPs []string
	// UDPMuxPort, when set, serves every call's ICE over this one UDP port.
	UDPMuxPort int
	// TCPMuxPort, when set, also offers ICE-TCP on this one TCP port.
	TCPMuxPort int
	// ICEServers (STUN/TURN) are handed to each peer connection.
	ICEServers []webrtc.ICEServer
	// NoLoopback drops loopback candidates (kept by default so localhost works).
	NoLoopback bool
	// ConnectTimeout: a call whose ICE has not connected by then is closed (default 15 s).
	ConnectTimeout time.Duration
	// DisconnectedTimeout: ICE is disconnected once nothing (media, RTCP, STUN) was heard from
	// the peer for this long (default 3 s); the call then plays nothing, and bills nothing, until
	// the peer is heard again. It bounds what a vanished peer is billed for audio it never heard:
	// at most DisconnectedTimeout + iceKeepalive after it went (pion checks on that period).
	// A live peer is heard at least every iceKeepalive (its answers to our keep-alive checks;
	// a browser's mic sends 50 packets a second besides), so below ~2 s a peer on a slow path
	// that sends no media would be taken for gone now and then (its reply pauses, nothing is
	// lost).
	DisconnectedTimeout time.Duration
	// FailedTimeout: a disconnected call whose peer is still not heard this long after is
	// ended (ErrICEFailed; default 10 s), so a vanished peer releases its call's slot within
	// DisconnectedTimeout + FailedTimeout + iceKeepalive.
	FailedTimeout time.Duration
	// PrivateCandidates: whether offers' candidates may name private, loopback and link-local
	// addresses (CandidatePolicy; the zero value refuses them where this host has a public
	// address).
	PrivateCandidates CandidatePolicy
	// Log is where a call reports what its peer did wrong, at WARN (nil: slog.Default()).
	Log *slog.Logger
}

// ICE liveness (Config.DisconnectedTimeout, FailedTimeout).
const (
	// DefaultDisconnectedTimeout: pion's 5 s, checked every 2 s, billed a killed peer 5–7 s of
	// reply audio it never heard (measured +5.06 s, TestWebRTCBillsWhatWasHeard); 3 s checked
	// every second bounds that to 3–4 s (measured +3.12 s) and still leaves a live peer three
	// keep-alive answers to be heard by.
	DefaultDisconnectedTimeout = 3 * time.Second
	// DefaultFailedTimeout: how long a disconnected call waits for its peer to come back (a
	// network handover) before it ends and frees its slot.
	DefaultFailedTimeout = 10 * time.Second
	// iceKeepalive is how often the call sends the peer a consent check (a STUN binding request,
	// about 100 bytes, RFC 7675) while connected, and how often pion looks at whether the peer
	// was heard: the peer's answers keep a call whose peer sends no media alive, and a vanished
	// peer is noticed within DisconnectedTimeout + iceKeepalive (pion's default is 2 s).
	iceKeepalive = time.Second
	// MinDisconnectedTimeout is the shortest DisconnectedTimeout an operator should set: two
	// keep-alive periods, so a live peer that sends no media is not taken for gone between two
	// of its answers.
	MinDisconnectedTimeout = 2 * iceKeepalive
)

func (c Config) withDefaults() Config {
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = 15 * time.Second
	}
	if c.DisconnectedTimeout <= 0 {
		c.DisconnectedTimeout = DefaultDisconnectedTimeout
	}
	if c.FailedTimeout <= 0 {
		c.FailedTimeout = DefaultFailedTimeout
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	return c
}

// Endpoint answers SDP offers with calls; it owns the shared muxes.
type Endpoint struct {
	cfg     Config
	metrics *metrics
	api     *webrtc.API
	closer  []func() error
	// refusePrivate: Config.PrivateCandidates, with auto decided at NewEndpoint.
	refusePrivate bool
}

// NewEndpoint builds the pion API: Opus, default interceptors (NACK, RTCP reports), and a
// SettingEngine from cfg.
func NewEndpoint(cfg Config) (*Endpoint, error) {
	cfg = cfg.withDefaults()
	e := &Endpoint{cfg: cfg, metrics: newMetrics()}
	switch cfg.PrivateCandidates {
	case CandidatesRefusePrivate:
		e.refusePrivate = true
	case CandidatesAuto:
		e.refusePrivate = hasPublicAddress(cfg.PublicIPs, net.InterfaceAddrs)
	}
	m := &webrtc.MediaEngine{}
	if err := m.RegisterCodec(webrtc.RTPCodecParameters{
		RTPCodecCapability: opusCapability, PayloadType: 111,
	}, webrtc.RTPCodecTypeAudio); err != nil {
		return nil, err
	}
	ir := &interceptor.Registry{}
	if err := webrtc.RegisterDefaultInterceptors(m, ir); err != nil {
		return nil, err
	}
	se := webrtc.SettingEngine{}
	if cfg.PortMin != 0 || cfg.PortMax != 0 {
		if err := se.SetEphemeralUDPPortRange(cfg.PortMin, cfg.PortMax); err != nil {
			return nil, fmt.Errorf("%w: port range: %w", ErrConfig, err)
		}
	}
	if len(cfg.PublicIPs) > 0 {
		se.SetNAT1To1IPs(cfg.PublicIPs, webrtc.ICECandidateTypeHost)
	}
	se.SetIncludeLoopbackCandidate(!cfg.NoLoopback)
	se.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
	se.SetICETimeouts(cfg.DisconnectedTimeout, cfg.FailedTimeout, iceKeepalive)
	networks := []webrtc.NetworkType{webrtc.NetworkTypeUDP4, webrtc.NetworkTypeUDP6}
	if cfg.UDPMuxPort != 0 {
		mux, err := ice.NewMultiUDPMuxFromPort(cfg.UDPMuxPort)
		if err != nil {
			return nil, fmt.Errorf("%w: UDP mux on %d: %w", ErrConfig, cfg.UDPMuxPort, err)
		}
		se.SetICEUDPMux(mux)
		e.closer = append(e.closer, mux.Close)
	}
	if cfg.TCPMuxPort != 0 {
		l, err := net.ListenTCP("tcp", &net.TCPAddr{Port: cfg.TCPMuxPort})
		if err != nil {
			e.Close()
			return nil, fmt.Errorf("%w: ICE-TCP on %d: %w", ErrConfig, cfg.TCPMuxPort, err)
		}
		mux := webrtc.NewICETCPMux(nil, l, 8)
		se.SetICETCPMux(mux)
		e.closer = append(e.closer, mux.Close)
		networks = append(networks, webrtc.NetworkTypeTCP4, webrtc.NetworkTypeTCP6)
	}
	se.SetNetworkTypes(networks)
	// The call reads its data channel itself (readEvents): a message over MaxEventMessage is
	// refused by name instead of closing the channel (pion's reader) or stalling the association
	// (pion advertised 1 GiB, over what its 1 MiB receive window can ever reassemble).
	se.DetachDataChannels()
	se.SetSCTPMaxMessageSize(MaxEventMessage)
	se.SetSCTPMaxReceiveBufferSize(sctpReceiveBuffer)
	e.api = webrtc.NewAPI(webrtc.WithMediaEngine(m), webrtc.WithInterceptorRegistry(ir), webrtc.WithSettingEngine(se))
	return e, nil
}

// RefusesPrivateCandidates reports whether offers' private, loopback and link-local candidates
// are dropped (Config.PrivateCandidates, auto decided).
func (e *Endpoint) RefusesPrivateCandidates() bool { return e.refusePrivate }

// Close releases the shared muxes (calls must be closed first).
func (e *Endpoint) Close() error {
	var errs []error
	for _, c := range e.closer {
		errs = append(errs, c())
	}
	e.closer = nil
	return errors.Join(errs...)
}

// opusCapability is what the answer offers for Opus. It does not ask for DTX (usedtx=1: Chrome
// sends DTX only when the answer asks): the server's own VAD (Silero) decides what is speech,
// and DTX would let the browser's encoder drop the quiet it judges silent before voiced sees it,
// to save at most ~32 kb/s upstream per call, where a call's cost is the speech models. A peer
// that sends DTX anyway is kept in real time: inbound turns the timestamp jump into silence.
var opusCapability = webrtc.RTPCodecCapability{
	MimeType: webrtc.MimeTypeOpus, ClockRate: 48000, Channels: 2,
	SDPFmtpLine: "minptime=10;useinbandfec=1",
}

// Answer validates offer, makes the call's peer connection and returns the SDP answer (ICE
// gathering complete: no trickle) and the running Call. h's functions are called from the
// call's goroutines (see Handlers). The offer's refused candidates (Config.PrivateCandidates)
// are dropped before pion sees them: the call never sends a packet to their addresses.
func (e *Endpoint) Answer(ctx context.Context, offer string, h Handlers) (string, *Call, error) {
	d, err := validOffer(offer)
	if err != nil {
		return "", nil, err
	}
	if e.refusePrivate && dropPrivateCandidates(d) > 0 {
		b, err := d.Marshal()
		if err != nil {
			return "", nil, fmt.Errorf("%w: %w", ErrBadOffer, err)
		}
		offer = string(b)
	}
	pc, err := e.api.NewPeerConnection(webrtc.Configuration{ICEServers: e.cfg.ICEServers})
	if err != nil {
		return "", nil, err
	}
	c, err := newCall(e.cfg, e.metrics, pc, h, peerMaxMessage(d))
	if err != nil {
		pc.Close()
		return "", nil, err
	}
	answer, err := c.negotiate(ctx, offer)
	if err != nil {
		c.Close()
		return "", nil, err
	}
	return answer, c, nil
}
