package main

import (
	"flag"
	"testing"
)

// TestWebRTCFlagsRefusedByName: each WebRTC setting rtc refuses is reported under its flag, in
// the words voiced has always used.
func TestWebRTCFlagsRefusedByName(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--webrtc-udp-ports", "9-1"}, `--webrtc-udp-ports "9-1" must be MIN-MAX, 1 ≤ MIN ≤ MAX ≤ 65535`},
		{[]string{"--webrtc-public-ip", "203.0.113.7, host"}, `--webrtc-public-ip "host" is not an IP address`},
		{[]string{"--webrtc-ice-tcp-port", "70000"}, "--webrtc-udp-mux-port and --webrtc-ice-tcp-port must be ports (0: off)"},
		{[]string{"--webrtc-ice-servers", "stun:a:3478,http://b"}, `--webrtc-ice-servers "http://b": a URL starts with stun:, stuns:, turn: or turns:`},
		{[]string{"--webrtc-connect-timeout", "0s"}, "--webrtc-connect-timeout must be > 0"},
		{[]string{"--webrtc-disconnect-timeout", "1s"}, "--webrtc-disconnect-timeout must be at least 2s (the server checks a call's peer every second; a shorter wait takes a live peer on a slow path for gone)"},
		{[]string{"--webrtc-failed-timeout", "-1s"}, "--webrtc-failed-timeout must be > 0"},
		{[]string{"--webrtc-private-candidates", "maybe"}, `--webrtc-private-candidates: rtc: invalid config: candidate policy "maybe": want auto, allow or refuse`},
	} {
		var c webrtcConfig
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		c.flags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if err := c.validate(); err == nil || err.Error() != tc.want {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
	var c webrtcConfig
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	c.flags(fs)
	if err := fs.Parse([]string{"--webrtc-udp-ports", "10000-10100", "--webrtc-ice-servers", "stun:a:3478,turn:b:3478", "--webrtc-turn-username", "u", "--webrtc-turn-credential", "p"}); err != nil {
		t.Fatal(err)
	}
	if err := c.validate(); err != nil {
		t.Fatal(err)
	}
	if c.cfg.PortMin != 10000 || c.cfg.PortMax != 10100 || len(c.cfg.ICEServers) != 2 || c.cfg.ICEServers[0].Username != "" || c.cfg.ICEServers[1].Username != "u" {
		t.Errorf("config %+v", c.cfg)
	}
	off := webrtcConfig{enabled: false, ports: "nonsense"}
	if err := off.validate(); err != nil {
		t.Errorf("--webrtc=false still checks its settings: %v", err)
	}
}
