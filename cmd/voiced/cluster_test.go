package main

import (
	"net"
	"testing"

	"github.com/voiced/voiced/cluster"
	"github.com/voiced/voiced/speechcore"
)

// The door refuses to forward a request a peer forwarded by this header's name; the cluster sets it.
func TestForwardedHeaderAgrees(t *testing.T) {
	if cluster.ForwardedHeader != speechcore.ForwardedHeader {
		t.Fatalf("cluster sets %q, speechcore reads %q", cluster.ForwardedHeader, speechcore.ForwardedHeader)
	}
}

func TestAdvertiseFrom(t *testing.T) {
	tests := []struct {
		addr string
		tls  bool
		want string
	}{
		{"127.0.0.1:8200", false, "http://127.0.0.1:8200"},
		{"10.0.0.5:443", true, "https://10.0.0.5:443"},
		{"[::1]:8200", false, "http://[::1]:8200"},
		{"0.0.0.0:8200", false, ""},
		{"[::]:8200", false, ""},
	}
	for _, tc := range tests {
		a, err := net.ResolveTCPAddr("tcp", tc.addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := advertiseFrom(a, tc.tls); got != tc.want {
			t.Errorf("advertiseFrom(%s, %v) = %q, want %q", tc.addr, tc.tls, got, tc.want)
		}
	}
}
