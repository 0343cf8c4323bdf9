package cluster

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voiced/voiced/internal/testkit"
)

func redisURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv("VOICED_TEST_REDIS_URL")
	if u == "" {
		t.Skip("VOICED_TEST_REDIS_URL unset: no Redis server to test against (Debian package redis-server, scripts/install-deps.sh --test; eval \"$(scripts/test-services.sh)\")")
	}
	return u
}

// TestForwardOnlyToSignedEntries: a request is forwarded, with its Authorization, to a peer whose
// entry is signed with the cluster's secret; an entry someone with write access to the Redis put
// there (a bare URL, a JSON entry with a made-up MAC, one signed with another secret, a signed one
// long expired) is ignored with a warning and answered as a gone node, and the URL it names never
// sees the request.
func TestForwardOnlyToSignedEntries(t *testing.T) {
	ctx := context.Background()
	prefix := "voiced:test:node:" + NewNodeID() + ":"
	secret := []byte("0123456789abcdef0123456789abcdef-cluster")

	var mu sync.Mutex
	seen := map[string]string{} // server -> the Authorization it was sent
	server := func(name string) string {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen[name] = r.Header.Get("Authorization")
			mu.Unlock()
			w.Write([]byte("served by " + name))
		}))
		t.Cleanup(s.Close)
		return s.URL
	}
	peerURL, attackerURL := server("peer"), server("attacker")

	logs := &testkit.LogBuffer{}
	open := func(id string, secret []byte, now func() time.Time) *Node {
		n, err := Open(ctx, Config{RedisURL: redisURL(t), NodeID: id, Prefix: prefix, Secret: secret, Now: now,
			Log: slog.New(slog.NewTextHandler(logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Close(ctx) })
		return n
	}
	here := open("here-"+NewNodeID(), secret, nil)
	peer := open("peer-"+NewNodeID(), secret, nil)
	if err := peer.Announce(ctx, peerURL); err != nil {
		t.Fatal(err)
	}
	other := open("other-"+NewNodeID(), []byte("another cluster's secret, 32 bytes or more"), nil)
	stale := open("stale-"+NewNodeID(), secret, func() time.Time { return time.Now().Add(-time.Hour) })

	forward := func(id string) (int, string, error) {
		req := httptest.NewRequest("POST", "/v1/audio/transcript/x", strings.NewReader("body"))
		req.Header.Set("Authorization", "Bearer service-token")
		w := httptest.NewRecorder()
		var failed error
		here.Forward(w, req, id, func(w http.ResponseWriter, err error) {
			failed = err
			w.WriteHeader(http.StatusNotFound)
		})
		return w.Code, w.Body.String(), failed
	}

	code, body, err := forward(peer.ID())
	if err != nil || code != 200 || body != "served by peer" || seen["peer"] != "Bearer service-token" {
		t.Fatalf("a signed peer: %d %q err %v, Authorization seen %q", code, body, err, seen["peer"])
	}

	forged := map[string]string{
		"bare URL":          attackerURL,
		"made-up MAC":       `{"url":"` + attackerURL + `","exp":` + "99999999999999" + `,"mac":"AAAA"}`,
		"another secret":    other.entry(attackerURL),
		"expired an hour":   stale.entry(attackerURL),
		"not JSON":          `{"url":`,
		"peer's MAC, moved": strings.Replace(peer.entry(peerURL), peerURL, attackerURL, 1),
	}
	for name, entry := range forged {
		id := "forged-" + NewNodeID()
		if err := here.rdb.Set(ctx, prefix+id, entry, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { here.rdb.Del(ctx, prefix+id) })
		code, _, err := forward(id)
		if !errors.Is(err, ErrNodeGone) || !errors.Is(err, ErrUnverifiedNode) || code != http.StatusNotFound {
			t.Errorf("%s: %d err %v, want a gone node (ErrNodeGone and ErrUnverifiedNode)", name, code, err)
		}
		if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "node="+id) {
			t.Errorf("%s: no warning naming node %s:\n%s", name, id, logs)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if auth, hit := seen["attacker"]; hit {
		t.Errorf("a forged entry's URL was sent a request (Authorization %q)", auth)
	}
}

// TestOpenNeedsSecret: no node runs without the cluster's secret.
func TestOpenNeedsSecret(t *testing.T) {
	_, err := Open(context.Background(), Config{RedisURL: "redis://127.0.0.1:1/0", Secret: []byte("short")})
	if !errors.Is(err, ErrNoSecret) {
		t.Fatalf("Open with a 5-byte secret: %v, want ErrNoSecret", err)
	}
}
