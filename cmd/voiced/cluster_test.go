package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
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

// TestClusterDefaultsToTicketStore: the cluster store is the ticket store unless one of its own
// is given; sharing it, the ticket store's readiness check stands for both.
func TestClusterDefaultsToTicketStore(t *testing.T) {
	token := []byte("the service token")
	var c clusterConfig
	if err := c.validate("redis://tickets:6379/0", token); err != nil || c.store != "redis://tickets:6379/0" || !c.sharesTickets {
		t.Errorf("no --cluster-store: store %q shares %v (%v), want the ticket store, shared", c.store, c.sharesTickets, err)
	}
	c = clusterConfig{store: "redis://cluster:6379/1"}
	if err := c.validate("redis://tickets:6379/0", token); err != nil || c.store != "redis://cluster:6379/1" || c.sharesTickets {
		t.Errorf("its own --cluster-store: store %q shares %v (%v), want its own, not shared", c.store, c.sharesTickets, err)
	}
	c = clusterConfig{}
	if err := c.validate("", nil); err != nil || c.store != "" {
		t.Errorf("no store at all: %q %v, want a single node", c.store, err)
	}
	c = clusterConfig{}
	if err := c.validate("http://tickets", token); err == nil || err.Error() != "--cluster-store must be a redis:// URL" {
		t.Errorf("a ticket store that is not Redis: %v", err)
	}
}
