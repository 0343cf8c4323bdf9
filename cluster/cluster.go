// Package cluster lets several voiced nodes behind one load balancer serve requests for a
// resource that lives on one node (a half-duplex transcript's decode state): each node announces
// the URL its peers reach it at in Redis under its node id, with a TTL it keeps refreshing; a node
// that receives a request for another node's resource forwards it there. A node that dies stops
// refreshing: within the TTL its entry is gone and its resources are answered as not found.
package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// ForwardedHeader marks a request a peer forwarded: its receiver serves it or refuses it, and
// never forwards it again (no loops).
const ForwardedHeader = "X-Voiced-Forwarded-By"

// DefaultTTL is how long a node's entry lives without a refresh; it is refreshed every TTL/3.
const DefaultTTL = 15 * time.Second

// Errors, by name.
var (
	// ErrNodeGone: no live node has this id (it left, or died and its entry expired).
	ErrNodeGone = errors.New("cluster: no live node has this id")
	// ErrBadNodeID: a node id must be 1-40 of [a-z0-9-].
	ErrBadNodeID = errors.New("cluster: a node id must be 1 to 40 characters of a-z, 0-9 and -")
)

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
	Log      *slog.Logger
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
	if err := n.rdb.Set(ctx, n.key(n.cfg.NodeID), url, n.cfg.TTL).Err(); err != nil {
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
		err := n.rdb.Set(rctx, n.key(n.cfg.NodeID), url, n.cfg.TTL).Err()
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
	u, err := n.rdb.Get(ctx, n.key(id)).Result()
	if errors.Is(err, redis.Nil) {
		return "", ErrNodeGone
	}
	if err != nil {
		return "", fmt.Errorf("look up node %s: %w", id, err)
	}
	return u, nil
}

type targetKey struct{}
type errKey struct{}

// Forward sends r to the node id and copies its answer to w, streaming both bodies. When the node
// is gone or cannot be reached, onErr answers the client instead (with ErrNodeGone, or the
// transport's error). The client's Authorization travels as it came: every node shares the
// service token.
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
