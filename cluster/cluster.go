// Package cluster lets several voiced nodes behind one load balancer serve requests for a
// resource that lives on one node (a half-duplex transcript's decode state): each node announces
// the URL its peers reach it at in Redis under its node id, with a TTL it keeps refreshing; a node
// that receives a request for another node's resource forwards it there. A node that dies stops
// refreshing: within the TTL its entry is gone and its resources are answered as not found.
//
// A forwarded request carries its client's credential, so a node forwards only to an entry signed
// with the cluster's secret (HMAC-SHA256 over the node id, its URL and the entry's expiry): whoever
// can write the Redis but does not hold the secret cannot point a node id at a URL of their own.
// An unsigned, forged or expired entry is ignored with a warning, as if the node were gone.
package cluster

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/voiced/voiced/door"
)

// ForwardedHeader marks a request a peer forwarded: its receiver serves it or refuses it, and
// never forwards it again (no loops). The doors read it (door.Forwarded).
const ForwardedHeader = door.ForwardedHeader

// DefaultTTL is how long a node's entry lives without a refresh; it is refreshed every TTL/3.
const DefaultTTL = 15 * time.Second

// Errors, by name.
var (
	// ErrNodeGone: no live node has this id (it left, or died and its entry expired).
	ErrNodeGone = errors.New("cluster: no live node has this id")
	// ErrBadNodeID: a node id must be 1-40 of [a-z0-9-].
	ErrBadNodeID = errors.New("cluster: a node id must be 1 to 40 characters of a-z, 0-9 and -")
	// ErrUnverifiedNode: the node's entry is not signed with this cluster's secret, or has
	// expired; it is treated as gone (errors.Is(err, ErrNodeGone) holds too).
	ErrUnverifiedNode = errors.New("cluster: the node's entry is not signed with this cluster's secret")
	// ErrNoSecret: a node needs the cluster's secret to sign and check entries.
	ErrNoSecret = errors.New("cluster: no cluster secret: entries cannot be signed or checked")
)

// MinSecret is the shortest secret Open takes (an HMAC-SHA256 key of 256 bits).
const MinSecret = 32

// maxClockSkew is how far past its signed expiry an entry is still taken: nodes' clocks differ a
// little, and an entry lives only DefaultTTL (15 s) anyway.
const maxClockSkew = 5 * time.Second

var nodeIDPattern = regexp.MustCompile(`^[a-z0-9-]{1,40}$`)

// ValidNodeID reports whether id can name a node (it is embedded in resource ids).
func ValidNodeID(id string) bool { return nodeIDPattern.MatchString(id) }

// NewNodeID returns a random node id (12 hex digits).
func NewNodeID() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Config of a node.
type Config struct {
	RedisURL string        // redis://host:port/db, the store every node shares
	NodeID   string        // this node's id (ValidNodeID); NewNodeID when empty
	TTL      time.Duration // default DefaultTTL
	Prefix   string        // Redis key prefix; default "voiced:node:"
	// Secret signs this node's entry and checks its peers' (at least MinSecret bytes; every node
	// of the cluster holds the same one). Required.
	Secret []byte
	Log    *slog.Logger
	// Now is the clock entries' expiries are signed and checked on (default time.Now).
	Now func() time.Time
}

// Node is this process's membership. Announce publishes its URL; Forward sends a request to a peer.
type Node struct {
	cfg   Config
	rdb   *redis.Client
	proxy *httputil.ReverseProxy

	mu   sync.Mutex
	url  string // what peers reach this node at, set by Announce
	stop context.CancelFunc
	done chan struct{}
}

// Open connects to Redis (it must answer) and returns the node, not yet announced.
func Open(ctx context.Context, cfg Config) (*Node, error) {
	if cfg.NodeID == "" {
		cfg.NodeID = NewNodeID()
	}
	if !ValidNodeID(cfg.NodeID) {
		return nil, fmt.Errorf("%w: %q", ErrBadNodeID, cfg.NodeID)
	}
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "voiced:node:"
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if len(cfg.Secret) < MinSecret {
		return nil, fmt.Errorf("%w (%d bytes given, %d needed)", ErrNoSecret, len(cfg.Secret), MinSecret)
	}
	opt, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("cluster store %q: %w", cfg.RedisURL, err)
	}
	rdb := redis.NewClient(opt)
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		return nil, fmt.Errorf("cluster store does not answer: %w", err)
	}
	n := &Node{cfg: cfg, rdb: rdb}
	n.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			target := pr.In.Context().Value(targetKey{}).(*url.URL)
			pr.SetURL(target)
			pr.Out.Header.Set(ForwardedHeader, cfg.NodeID)
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			onErr := r.Context().Value(errKey{}).(func(http.ResponseWriter, error))
			onErr(w, err)
		},
	}
	return n, nil
}

// ID is this node's id.
func (n *Node) ID() string { return n.cfg.NodeID }

// Announce publishes url (how peers reach this node: scheme://host:port) and keeps it alive until
// Close. Calling it again replaces the URL.
func (n *Node) Announce(ctx context.Context, url string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.url = url
	if err := n.rdb.Set(ctx, n.key(n.cfg.NodeID), n.entry(url), n.cfg.TTL).Err(); err != nil {
		return fmt.Errorf("announce node %s: %w", n.cfg.NodeID, err)
	}
	if n.stop != nil {
		return nil
	}
	hctx, stop := context.WithCancel(context.Background())
	n.stop, n.done = stop, make(chan struct{})
	go n.heartbeat(hctx, n.done)
	return nil
}

// heartbeat refreshes the entry every TTL/3; a refresh that fails is logged and retried.
func (n *Node) heartbeat(ctx context.Context, done chan struct{}) {
	defer close(done)
	tick := time.NewTicker(n.cfg.TTL / 3)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		n.mu.Lock()
		url := n.url
		n.mu.Unlock()
		rctx, cancel := context.WithTimeout(ctx, n.cfg.TTL/3)
		err := n.rdb.Set(rctx, n.key(n.cfg.NodeID), n.entry(url), n.cfg.TTL).Err()
		cancel()
		if err != nil && ctx.Err() == nil {
			n.cfg.Log.Warn("cluster: refreshing this node's entry failed", "node", n.cfg.NodeID, "err", err.Error())
		}
	}
}

// Lookup returns the URL of the live node id, or ErrNodeGone.
func (n *Node) Lookup(ctx context.Context, id string) (string, error) {
	if !ValidNodeID(id) {
		return "", ErrNodeGone
	}
	raw, err := n.rdb.Get(ctx, n.key(id)).Result()
	if errors.Is(err, redis.Nil) {
		return "", ErrNodeGone
	}
	if err != nil {
		return "", fmt.Errorf("look up node %s: %w", id, err)
	}
	u, err := n.verify(id, raw)
	if err != nil {
		n.cfg.Log.Warn("cluster: ignoring a node entry that does not verify; nothing is forwarded to it", "node", id, "err", err.Error())
		return "", fmt.Errorf("%w: %w: node %s", ErrNodeGone, err, id)
	}
	return u, nil
}

// signedEntry is what a node's key holds: its URL, until when the entry may be taken (Unix ms),
// and the MAC over both and the node id.
type signedEntry struct {
	URL     string `json:"url"`
	Expires int64  `json:"exp"`
	MAC     string `json:"mac"` // base64url HMAC-SHA256 (mac)
}

// entry is this node's signed entry for url, valid for one TTL from now.
func (n *Node) entry(url string) string {
	exp := n.cfg.Now().Add(n.cfg.TTL).UnixMilli()
	b, _ := json.Marshal(signedEntry{URL: url, Expires: exp, MAC: base64.RawURLEncoding.EncodeToString(n.mac(n.cfg.NodeID, url, exp))})
	return string(b)
}

// mac signs id, url and exp. The id (no newline: ValidNodeID) comes first and the expiry (digits)
// last, so no two entries sign the same bytes.
func (n *Node) mac(id, url string, exp int64) []byte {
	h := hmac.New(sha256.New, n.cfg.Secret)
	h.Write([]byte("voiced cluster node v1\n" + id + "\n" + url + "\n" + strconv.FormatInt(exp, 10)))
	return h.Sum(nil)
}

// verify returns the URL of id's entry raw when its MAC holds and it has not expired.
func (n *Node) verify(id, raw string) (string, error) {
	var e signedEntry
	if err := json.Unmarshal([]byte(raw), &e); err != nil || e.URL == "" || e.MAC == "" {
		return "", fmt.Errorf("%w: the entry is not a signed entry", ErrUnverifiedNode)
	}
	got, err := base64.RawURLEncoding.DecodeString(e.MAC)
	if err != nil || !hmac.Equal(got, n.mac(id, e.URL, e.Expires)) {
		return "", fmt.Errorf("%w: its signature does not match", ErrUnverifiedNode)
	}
	if n.cfg.Now().After(time.UnixMilli(e.Expires).Add(maxClockSkew)) {
		return "", fmt.Errorf("%w: it expired at %s", ErrUnverifiedNode, time.UnixMilli(e.Expires).UTC().Format(time.RFC3339))
	}
	return e.URL, nil
}

type targetKey struct{}
type errKey struct{}

// Forward sends r to the node id and copies its answer to w, streaming both bodies. When the node
// is gone or cannot be reached, onErr answers the client instead (with ErrNodeGone, or the
// transport's error). The client's Authorization travels as it came (every node shares the
// service token), and only to a URL whose entry Lookup verified.
func (n *Node) Forward(w http.ResponseWriter, r *http.Request, id string, onErr func(http.ResponseWriter, error)) {
	base, err := n.Lookup(r.Context(), id)
	if err != nil {
		onErr(w, err)
		return
	}
	target, err := url.Parse(base)
	if err != nil {
		onErr(w, fmt.Errorf("node %s announced a bad URL %q: %w", id, base, err))
		return
	}
	ctx := context.WithValue(context.WithValue(r.Context(), targetKey{}, target), errKey{}, onErr)
	n.proxy.ServeHTTP(w, r.WithContext(ctx))
}

// Close withdraws this node's entry (its peers answer its resources as not found at once) and
// closes the store connection.
func (n *Node) Close(ctx context.Context) error {
	n.mu.Lock()
	stop, done := n.stop, n.done
	n.stop = nil
	n.mu.Unlock()
	if stop != nil {
		stop()
		<-done
		n.rdb.Del(ctx, n.key(n.cfg.NodeID))
	}
	return n.rdb.Close()
}

// Ping checks that the store answers (the readiness probe asks it).
func (n *Node) Ping(ctx context.Context) error { return n.rdb.Ping(ctx).Err() }

func (n *Node) key(id string) string { return n.cfg.Prefix + id }
