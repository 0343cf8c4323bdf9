package main

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voiced/voiced/cluster"
	"github.com/voiced/voiced/speechdoor"
)

// The door refuses to forward a request a peer forwarded by this header's name; the cluster sets it.
func TestForwardedHeaderAgrees(t *testing.T) {
	if cluster.ForwardedHeader != speechdoor.ForwardedHeader {
		t.Fatalf("cluster sets %q, speechdoor reads %q", cluster.ForwardedHeader, speechdoor.ForwardedHeader)
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

// TestClusterSecret: the secret nodes sign their entries with is the file's, else one derived from
// the service token (the same on every node, not the token itself); without either a cluster does
// not start.
func TestClusterSecret(t *testing.T) {
	dir := t.TempDir()
	short, long := filepath.Join(dir, "short"), filepath.Join(dir, "long")
	os.WriteFile(short, []byte("too short\n"), 0o600)
	os.WriteFile(long, []byte("  a cluster secret of 32 bytes or more \n"), 0o600)

	if _, err := clusterSecret(short, []byte("token")); err == nil || !strings.Contains(err.Error(), "at least 32") {
		t.Errorf("a short secret file: %v", err)
	}
	if _, err := clusterSecret("", nil); err == nil || !strings.Contains(err.Error(), "--cluster-secret-file") {
		t.Errorf("no secret and no service token: %v", err)
	}
	if s, err := clusterSecret(long, []byte("token")); err != nil || string(s) != "a cluster secret of 32 bytes or more" {
		t.Errorf("the file's secret: %q %v", s, err)
	}
	a, _ := clusterSecret("", []byte("the service token"))
	b, _ := clusterSecret("", []byte("the service token"))
	c, _ := clusterSecret("", []byte("another token"))
	if !bytes.Equal(a, b) || bytes.Equal(a, c) || len(a) < cluster.MinSecret || bytes.Contains(a, []byte("the service token")) {
		t.Errorf("derived secrets: %x %x %x", a, b, c)
	}
}
