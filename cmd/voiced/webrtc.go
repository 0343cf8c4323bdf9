package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"time"

	"github.com/voiced/voiced/rtc"
	"github.com/voiced/voiced/session"
)

// webrtcConfig is the flags of WebRTC calls beside the WebSocket, over the same conversation
// engine — POST /v1/realtime/calls (GA), POST /v1/realtime (beta, SDP body), and hanging up.
type webrtcConfig struct {
	enabled                bool
	ports, publicIPs, ice  string
	iceUser, iceCredential string
	udpMux, tcpMux         int
	connectTimeout         time.Duration
	disconnectTimeout      time.Duration
	failedTimeout          time.Duration
	privateCandidates      string
	cfg                    rtc.Config // built by validate
}

func (c *webrtcConfig) flags(fs *flag.FlagSet) {
	fs.BoolVar(&c.enabled, "webrtc", true, "serve WebRTC calls (POST /v1/realtime/calls)")
	fs.StringVar(&c.ports, "webrtc-udp-ports", "", "UDP port range for WebRTC media, MIN-MAX (default: any ephemeral port)")
	fs.StringVar(&c.publicIPs, "webrtc-public-ip", "", "comma-separated public IPs to advertise instead of the host's (NAT 1:1, e.g. a cloud VM's public address)")
	fs.IntVar(&c.udpMux, "webrtc-udp-mux-port", 0, "serve every call's media on this one UDP port (0: a port per call)")
	fs.IntVar(&c.tcpMux, "webrtc-ice-tcp-port", 0, "also offer ICE over TCP on this one port, for clients whose UDP is blocked (0: off)")
	fs.StringVar(&c.ice, "webrtc-ice-servers", "", "comma-separated STUN/TURN URLs handed to each call (stun:host:3478, turn:host:3478?transport=udp)")
	fs.StringVar(&c.iceUser, "webrtc-turn-username", "", "username for the TURN servers in --webrtc-ice-servers")
	fs.StringVar(&c.iceCredential, "webrtc-turn-credential", "", "credential for the TURN servers in --webrtc-ice-servers")
	fs.DurationVar(&c.connectTimeout, "webrtc-connect-timeout", 15*time.Second, "a call whose ICE has not connected by then is released")
	fs.DurationVar(&c.disconnectTimeout, "webrtc-disconnect-timeout", rtc.DefaultDisconnectedTimeout, "a call whose peer was not heard for this long (no media, RTCP or ICE answer) plays and bills nothing until it is heard again: a vanished peer is billed at most this + 1 s of reply audio it never heard (at least 2s: a live peer answers the server's checks every second)")
	fs.DurationVar(&c.failedTimeout, "webrtc-failed-timeout", rtc.DefaultFailedTimeout, "a call whose peer stays unheard this long after --webrtc-disconnect-timeout ends, freeing its slot")
	fs.StringVar(&c.privateCandidates, "webrtc-private-candidates", "auto", "offers' ICE candidates naming private, loopback, link-local or special-purpose addresses: refuse (dropped: the server never sends them a packet), allow, or auto (refuse when this host has a public address, --webrtc-public-ip's or an interface's)")
}

// validate builds the endpoint's rtc.Config from the flags (rtc checks each setting).
func (c *webrtcConfig) validate() error {
	if !c.enabled {
		return nil
	}
	if c.ports != "" {
		lo, hi, err := rtc.ParsePortRange(c.ports)
		if err != nil {
			return fmt.Errorf("--webrtc-udp-ports %q %w", c.ports, err)
		}
		c.cfg.PortMin, c.cfg.PortMax = lo, hi
	}
	for _, ip := range splitList(c.publicIPs) {
		if err := rtc.CheckPublicIP(ip); err != nil {
			return fmt.Errorf("--webrtc-public-ip %q %w", ip, err)
		}
		c.cfg.PublicIPs = append(c.cfg.PublicIPs, ip)
	}
	if err := rtc.CheckMuxPorts(c.udpMux, c.tcpMux); err != nil {
		return fmt.Errorf("--webrtc-udp-mux-port and --webrtc-ice-tcp-port %w", err)
	}
	c.cfg.UDPMuxPort, c.cfg.TCPMuxPort = c.udpMux, c.tcpMux
	for _, u := range splitList(c.ice) {
		s, err := rtc.ParseICEServer(u, c.iceUser, c.iceCredential)
		if err != nil {
			return fmt.Errorf("--webrtc-ice-servers %q: %w", u, err)
		}
		c.cfg.ICEServers = append(c.cfg.ICEServers, s)
	}
	if err := rtc.CheckTimeout(c.connectTimeout); err != nil {
		return fmt.Errorf("--webrtc-connect-timeout %w", err)
	}
	c.cfg.ConnectTimeout = c.connectTimeout
	if err := rtc.CheckDisconnectedTimeout(c.disconnectTimeout); err != nil {
		return fmt.Errorf("--webrtc-disconnect-timeout %w", err)
	}
	if err := rtc.CheckTimeout(c.failedTimeout); err != nil {
		return fmt.Errorf("--webrtc-failed-timeout %w", err)
	}
	c.cfg.DisconnectedTimeout, c.cfg.FailedTimeout = c.disconnectTimeout, c.failedTimeout
	policy, err := rtc.ParseCandidatePolicy(c.privateCandidates)
	if err != nil {
		return fmt.Errorf("--webrtc-private-candidates: %w", err)
	}
	c.cfg.PrivateCandidates = policy
	return nil
}

// start serves WebRTC calls on conv's conversations (nothing under --webrtc=false); peers (nil
// on a single node) serve other nodes' calls.
func (c *webrtcConfig) start(app *App, conv *session.Server, peers rtc.Peers) error {
	if !c.enabled || conv == nil {
		return nil
	}
	cfg := c.cfg
	cfg.Log = app.Log.With("component", "webrtc")
	endpoint, err := rtc.NewEndpoint(cfg)
	if err != nil {
		return fmt.Errorf("webrtc: %w", err)
	}
	app.Metrics.MustRegister(endpoint.Collectors()...)
	app.Log.Info("webrtc", "private_candidates", cfg.PrivateCandidates.String(), "refused", endpoint.RefusesPrivateCandidates())
	signal := &rtc.Signal{Sessions: conv, Endpoint: endpoint, Log: app.Log.With("component", "webrtc"), Peers: peers}
	app.HandleBrowser("POST /v1/realtime/calls", http.HandlerFunc(signal.ServeCalls))
	app.HandlePublic("POST /v1/realtime", http.HandlerFunc(signal.ServeBeta))
	conv.SetSideband(requireAuth(app, http.HandlerFunc(signal.ServeSideband)))
	app.Handle("DELETE /v1/realtime/calls/{call_id}", http.HandlerFunc(signal.ServeHangup))
	app.Handle("POST /v1/realtime/calls/{call_id}/hangup", http.HandlerFunc(signal.ServeHangup))
	app.OnShutdown(func(context.Context) error {
		signal.Close()
		return endpoint.Close()
	})
	return nil
}
