package rtc

import (
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/pion/webrtc/v4"
)

// The checks of an operator's settings for a Config, one per setting. Their errors are
// *SettingError: the rule broken, for the caller to put after the setting's name as its user knows
// it (a flag: `--webrtc-udp-ports "9-1" must be MIN-MAX, …`); errors.Is(err, ErrConfig) holds.

// SettingError is a setting a Config cannot take. Its text is the rule the setting breaks.
type SettingError struct{ Rule string }

func (e *SettingError) Error() string { return e.Rule }

// Is makes a SettingError an ErrConfig.
func (e *SettingError) Is(target error) bool { return target == ErrConfig }

// ParsePortRange reads a UDP port range MIN-MAX (Config.PortMin, PortMax): 1 ≤ MIN ≤ MAX ≤ 65535.
func ParsePortRange(s string) (lo, hi uint16, err error) {
	l, h, ok := strings.Cut(s, "-")
	a, err1 := strconv.ParseUint(l, 10, 16)
	b, err2 := strconv.ParseUint(h, 10, 16)
	if !ok || err1 != nil || err2 != nil || a == 0 || a > b {
		return 0, 0, &SettingError{"must be MIN-MAX, 1 ≤ MIN ≤ MAX ≤ 65535"}
	}
	return uint16(a), uint16(b), nil
}

// CheckPublicIP checks one of Config.PublicIPs.
func CheckPublicIP(ip string) error {
	if net.ParseIP(ip) == nil {
		return &SettingError{"is not an IP address"}
	}
	return nil
}

// CheckMuxPorts checks Config.UDPMuxPort and TCPMuxPort: each a port, or 0 for off.
func CheckMuxPorts(udp, tcp int) error {
	if udp < 0 || udp > 65535 || tcp < 0 || tcp > 65535 {
		return &SettingError{"must be ports (0: off)"}
	}
	return nil
}

// ParseICEServer reads one STUN or TURN URL for Config.ICEServers; a TURN server is handed
// username and credential.
func ParseICEServer(url, username, credential string) (webrtc.ICEServer, error) {
	if !strings.HasPrefix(url, "stun:") && !strings.HasPrefix(url, "stuns:") && !strings.HasPrefix(url, "turn:") && !strings.HasPrefix(url, "turns:") {
		return webrtc.ICEServer{}, &SettingError{"a URL starts with stun:, stuns:, turn: or turns:"}
	}
	s := webrtc.ICEServer{URLs: []string{url}}
	if strings.HasPrefix(url, "turn") {
		s.Username, s.Credential = username, credential
	}
	return s, nil
}

// CheckTimeout checks Config.ConnectTimeout or FailedTimeout as an operator sets it: > 0.
func CheckTimeout(d time.Duration) error {
	if d <= 0 {
		return &SettingError{"must be > 0"}
	}
	return nil
}

// CheckDisconnectedTimeout checks Config.DisconnectedTimeout as an operator sets it: at least
// MinDisconnectedTimeout.
func CheckDisconnectedTimeout(d time.Duration) error {
	if d < MinDisconnectedTimeout {
		return &SettingError{"must be at least " + MinDisconnectedTimeout.String() +
			" (the server checks a call's peer every second; a shorter wait takes a live peer on a slow path for gone)"}
	}
	return nil
}
