package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/voiced/voiced/door"
)

func TestAdvertiseURL(t *testing.T) {
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
		if got := AdvertiseURL(a, tc.tls); got != tc.want {
			t.Errorf("AdvertiseURL(%s, %v) = %q, want %q", tc.addr, tc.tls, got, tc.want)
		}
	}
}

// TestDeriveSecret: the same token gives the same secret on every node, another token another,
// long enough to sign with and not the token itself.
func TestDeriveSecret(t *testing.T) {
	a, b := DeriveSecret([]byte("the service token")), DeriveSecret([]byte("the service token"))
	c := DeriveSecret([]byte("another token"))
	if !bytes.Equal(a, b) || bytes.Equal(a, c) || len(a) < MinSecret || bytes.Contains(a, []byte("the service token")) {
		t.Errorf("derived secrets: %x %x %x", a, b, c)
	}
}

// TestPeersAnswerGoneOwners: a request for a resource whose owner is gone is answered with the
// door's refusal; an owner announced but unreachable is answered the same and logged.
func TestPeersAnswerGoneOwners(t *testing.T) {
	ctx := context.Background()
	logs := &lockedBuffer{}
	secret := []byte("0123456789abcdef0123456789abcdef-peers")
	prefix := "voiced:test:peers:" + NewNodeID() + ":"
	open := func(id string) *Node {
		n, err := Open(ctx, Config{RedisURL: redisURL(t), NodeID: id, Prefix: prefix, Secret: secret,
			Log: slog.New(slog.NewTextHandler(logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Close(ctx) })
		return n
	}
	here, dead := open("here-"+NewNodeID()), open("dead-"+NewNodeID())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	unreachable := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there any more
	if err := dead.Announce(ctx, unreachable); err != nil {
		t.Fatal(err)
	}
	gone := door.NewRefusal(http.StatusNotFound, "thing_not_found", "no such thing")
	p := here.Peers("thing", gone)
	if p.NodeID() != here.ID() {
		t.Fatalf("NodeID = %q, want %q", p.NodeID(), here.ID())
	}
	forward := func(owner string) (int, string) {
		w := httptest.NewRecorder()
		p.Forward(w, httptest.NewRequest("DELETE", "/v1/thing/x", nil), owner)
		var body struct{ Name string }
		json.Unmarshal(w.Body.Bytes(), &body)
		return w.Code, body.Name
	}
	if code, name := forward("never-" + NewNodeID()); code != http.StatusNotFound || name != "thing_not_found" {
		t.Fatalf("a gone owner: %d %q, want 404 thing_not_found", code, name)
	}
	if strings.Contains(logs.String(), "forwarding") {
		t.Errorf("a gone owner was logged as a failed forward:\n%s", logs)
	}
	if code, name := forward(dead.ID()); code != http.StatusNotFound || name != "thing_not_found" {
		t.Fatalf("an unreachable owner: %d %q, want 404 thing_not_found", code, name)
	}
	if !strings.Contains(logs.String(), "forwarding to the thing's node failed") || !strings.Contains(logs.String(), "node="+dead.ID()) {
		t.Errorf("an unreachable owner is not logged:\n%s", logs)
	}
}
