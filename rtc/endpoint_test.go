package rtc

import (
	"errors"
	"net"
	"testing"
)

// A port the endpoint cannot take is refused as ErrConfig, and the listener's own error stays
// reachable beside it (errors.As finds the *net.OpError).
func TestEndpointPortTakenKeepsCause(t *testing.T) {
	l, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4zero})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ep, err := NewEndpoint(Config{TCPMuxPort: l.Addr().(*net.TCPAddr).Port})
	if err == nil {
		ep.Close()
		t.Fatal("an ICE-TCP port already taken was accepted")
	}
	var op *net.OpError
	if !errors.Is(err, ErrConfig) || !errors.As(err, &op) {
		t.Fatalf("%v: want ErrConfig wrapping the listener's *net.OpError", err)
	}
}
