package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"time"

	"github.com/voiced/voiced/rtc"
)

// The webrtc component: WebRTC calls beside the WebSocket, over the same conversation engine —
// POST /v1/realtime/calls (GA), POST /v1/realtime (beta, SDP body), and hanging up.
func init() {
	register("webrtc", orderDoors, func() *component {
		var (
			enabled                bool
			ports, publicIPs, ice  string
			iceUser, iceCredential string
			udpMux, tcpMux         int
			connectTimeout         time.Duration
			disconnectTimeout      time.Duration
			failedTimeout          time.Duration
			privateCandidates      string
			cfg                    rtc.Config
			endpoint               *rtc.Endpoint
			signal                 *rtc.Signal
		)
		return &component{
			flags: func(fs *flag.FlagSet) {
				fs.BoolVar(&enabled, "webrtc", true, "serve WebRTC calls (POST /v1/realtime/calls)")
				fs.StringVar(&ports, "webrtc-udp-ports", "", "UDP port range for WebRTC media, MIN-MAX (default: any ephemeral port)")
				fs.StringVar(&publicIPs, "webrtc-public-ip", "", "comma-separated public IPs to advertise instead of the host's (NAT 1:1, e.g. a cloud VM's public address)")
				fs.IntVar(&udpMux, "webrtc-udp-mux-port", 0, "serve every call's media on this one UDP port (0: a port per call)")
				fs.IntVar(&tcpMux, "webrtc-ice-tcp-port", 0, "also offer ICE over TCP on this one port, for clients whose UDP is blocked (0: off)")
				fs.StringVar(&ice, "webrtc-ice-servers", "", "comma-separated STUN/TURN URLs handed to each call (stun:host:3478, turn:host:3478?transport=udp)")
				fs.StringVar(&iceUser, "webrtc-turn-username", "", "username for the TURN servers in --webrtc-ice-servers")
				fs.StringVar(&iceCredential, "webrtc-turn-credential", "", "credential for the TURN servers in --webrtc-ice-servers")
				fs.DurationVar(&connectTimeout, "webrtc-connect-timeout", 15*time.Second, "a call whose ICE has not connected by then is released")
				fs.DurationVar(&disconnectTimeout, "webrtc-disconnect-timeout", rtc.DefaultDisconnectedTimeout, "a call whose peer was not heard for this long (no media, RTCP or ICE answer) plays and bills nothing until it is heard again: a vanished peer is billed at most this + 1 s of reply audio it never heard (at least 2s: a live peer answers the server's checks every second)")
				fs.DurationVar(&failedTimeout, "webrtc-failed-timeout", rtc.DefaultFailedTimeout, "a call whose peer stays unheard this long after --webrtc-disconnect-timeout ends, freeing its slot")
				fs.StringVar(&privateCandidates, "webrtc-private-candidates", "auto", "offers' ICE candidates naming private, loopback, link-local or special-purpose addresses: refuse (dropped: the server never sends them a packet), allow, or auto (refuse when this host has a public address, --webrtc-public-ip's or an interface's)")
			},
			validate: func(app *App) error {
				if !enabled {
					return nil
				}
				if ports != "" {
					lo, hi, err := rtc.ParsePortRange(ports)
					if err != nil {
						return fmt.Errorf("--webrtc-udp-ports %q %w", ports, err)
					}
					cfg.PortMin, cfg.PortMax = lo, hi
				}
				for _, ip := range splitList(publicIPs) {
					if err := rtc.CheckPublicIP(ip); err != nil {
						return fmt.Errorf("--webrtc-public-ip %q %w", ip, err)
					}
					cfg.PublicIPs = append(cfg.PublicIPs, ip)
				}
				if err := rtc.CheckMuxPorts(udpMux, tcpMux); err != nil {
					return fmt.Errorf("--webrtc-udp-mux-port and --webrtc-ice-tcp-port %w", err)
				}
				cfg.UDPMuxPort, cfg.TCPMuxPort = udpMux, tcpMux
				for _, u := range splitList(ice) {
					s, err := rtc.ParseICEServer(u, iceUser, iceCredential)
					if err != nil {
						return fmt.Errorf("--webrtc-ice-servers %q: %w", u, err)
					}
					cfg.ICEServers = append(cfg.ICEServers, s)
				}
				if err := rtc.CheckTimeout(connectTimeout); err != nil {
					return fmt.Errorf("--webrtc-connect-timeout %w", err)
				}
				cfg.ConnectTimeout = connectTimeout
				if err := rtc.CheckDisconnectedTimeout(disconnectTimeout); err != nil {
					return fmt.Errorf("--webrtc-disconnect-timeout %w", err)
				}
				if err := rtc.CheckTimeout(failedTimeout); err != nil {
					return fmt.Errorf("--webrtc-failed-timeout %w", err)
				}
				cfg.DisconnectedTimeout, cfg.FailedTimeout = disconnectTimeout, failedTimeout
				policy, err := rtc.ParseCandidatePolicy(privateCandidates)
				if err != nil {
					return fmt.Errorf("--webrtc-private-candidates: %w", err)
				}
				cfg.PrivateCandidates = policy
				return nil
			},
			start: func(ctx context.Context, app *App) error {
				if !enabled || app.Conversations == nil {
					return nil
				}
				var err error
				cfg.Log = app.Log.With("component", "webrtc")
				if endpoint, err = rtc.NewEndpoint(cfg); err != nil {
					return fmt.Errorf("webrtc: %w", err)
				}
				app.Metrics.MustRegister(endpoint.Collectors()...)
				app.Log.Info("webrtc", "private_candidates", cfg.PrivateCandidates.String(), "refused", endpoint.RefusesPrivateCandidates())
				signal = &rtc.Signal{Sessions: app.Conversations, Endpoint: endpoint, Log: app.Log.With("component", "webrtc"), Peers: app.CallPeers}
				app.HandleBrowser("POST /v1/realtime/calls", http.HandlerFunc(signal.ServeCalls))
				app.HandlePublic("POST /v1/realtime", http.HandlerFunc(signal.ServeBeta))
				app.Conversations.SetSideband(requireAuth(app, http.HandlerFunc(signal.ServeSideband)))
				app.Handle("DELETE /v1/realtime/calls/{call_id}", http.HandlerFunc(signal.ServeHangup))
				app.Handle("POST /v1/realtime/calls/{call_id}/hangup", http.HandlerFunc(signal.ServeHangup))
				return nil
			},
			stop: func(ctx context.Context) error {
				if signal != nil {
					signal.Close()
				}
				if endpoint != nil {
					return endpoint.Close()
				}
				return nil
			},
		}
	})
}
