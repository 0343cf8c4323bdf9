package rtc

import (
	"errors"
	"testing"
	"time"
)

func TestParsePortRange(t *testing.T) {
	for _, tc := range []struct {
		in     string
		lo, hi uint16
		ok     bool
	}{
		{"10000-20000", 10000, 20000, true},
		{"1-1", 1, 1, true},
		{"1-65535", 1, 65535, true},
		{"0-10", 0, 0, false},
		{"20-10", 0, 0, false},
		{"10", 0, 0, false},
		{"10-65536", 0, 0, false},
		{"a-b", 0, 0, false},
		{"", 0, 0, false},
	} {
		lo, hi, err := ParsePortRange(tc.in)
		if (err == nil) != tc.ok || lo != tc.lo || hi != tc.hi {
			t.Errorf("ParsePortRange(%q) = %d %d %v", tc.in, lo, hi, err)
		}
		if err != nil && (!errors.Is(err, ErrConfig) || err.Error() != "must be MIN-MAX, 1 ≤ MIN ≤ MAX ≤ 65535") {
			t.Errorf("ParsePortRange(%q) error %q", tc.in, err)
		}
	}
}

func TestSettingChecks(t *testing.T) {
	if CheckPublicIP("203.0.113.7") != nil || CheckPublicIP("2001:db8::1") != nil {
		t.Error("an IP refused")
	}
	if err := CheckPublicIP("host.example"); err == nil || err.Error() != "is not an IP address" {
		t.Errorf("a host name: %v", err)
	}
	if CheckMuxPorts(0, 0) != nil || CheckMuxPorts(3478, 65535) != nil {
		t.Error("ports refused")
	}
	for _, p := range [][2]int{{-1, 0}, {0, 65536}, {70000, 1}} {
		if err := CheckMuxPorts(p[0], p[1]); !errors.Is(err, ErrConfig) || err.Error() != "must be ports (0: off)" {
			t.Errorf("CheckMuxPorts%v = %v", p, err)
		}
	}
	if CheckTimeout(time.Millisecond) != nil {
		t.Error("a positive timeout refused")
	}
	if err := CheckTimeout(0); err == nil || err.Error() != "must be > 0" {
		t.Errorf("CheckTimeout(0) = %v", err)
	}
	if CheckDisconnectedTimeout(MinDisconnectedTimeout) != nil {
		t.Error("the floor refused")
	}
	want := "must be at least 2s (the server checks a call's peer every second; a shorter wait takes a live peer on a slow path for gone)"
	if err := CheckDisconnectedTimeout(MinDisconnectedTimeout - time.Millisecond); err == nil || err.Error() != want {
		t.Errorf("under the floor: %v", err)
	}
}

func TestParseICEServer(t *testing.T) {
	for _, u := range []string{"stun:stun.example:3478", "stuns:stun.example"} {
		s, err := ParseICEServer(u, "user", "secret")
		if err != nil || len(s.URLs) != 1 || s.URLs[0] != u || s.Username != "" || s.Credential != nil {
			t.Errorf("ParseICEServer(%q) = %+v %v, want no credentials on STUN", u, s, err)
		}
	}
	for _, u := range []string{"turn:turn.example:3478?transport=udp", "turns:turn.example"} {
		s, err := ParseICEServer(u, "user", "secret")
		if err != nil || s.URLs[0] != u || s.Username != "user" || s.Credential != "secret" {
			t.Errorf("ParseICEServer(%q) = %+v %v, want TURN credentials", u, s, err)
		}
	}
	if _, err := ParseICEServer("http://turn.example", "", ""); !errors.Is(err, ErrConfig) || err.Error() != "a URL starts with stun:, stuns:, turn: or turns:" {
		t.Errorf("an http URL: %v", err)
	}
}
