package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/voiced/voiced/cluster"
	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/rtc"
	"github.com/voiced/voiced/speechdoor"
)

// The cluster component: when several nodes share a Redis (--cluster-store, by default the
// --ticket-store), each announces where its peers reach it, and a half-duplex transcript opened
// on one node can be pushed to and closed on any other, and a WebRTC call answered on one node can
// be hung up or given a sideband socket on any other (the request is forwarded to its owner).
func init() {
	register("cluster", orderStores, func() *component {
		var (
			store, nodeID, advertise, secretFile string
			secret                               []byte
			sharesTickets                        bool // the cluster store is the ticket store (one readiness check)
			node                                 *cluster.Node
		)
		return &component{
			flags: func(fs *flag.FlagSet) {
				fs.StringVar(&store, "cluster-store", "", "redis://… where nodes find each other (default: the --ticket-store when it is Redis; unset: a single node)")
				fs.StringVar(&nodeID, "node-id", "", "this node's id in the cluster (a-z, 0-9, -; default: random at each start)")
				fs.StringVar(&advertise, "advertise-url", "", "the URL other nodes reach this one at (http://10.0.0.5:8200); default: the bound address when it is not a wildcard")
				fs.StringVar(&secretFile, "cluster-secret-file", "", "file holding the secret (32 bytes or more, surrounding whitespace trimmed) every node signs its cluster entry with and checks its peers' by; a node forwards requests, credentials included, only to a signed entry (default: derived from the service token)")
			},
			validate: func(app *App) error {
				if f := app.flagSet.Lookup("ticket-store"); f != nil {
					if store == "" {
						store = f.Value.String()
					}
					sharesTickets = store == f.Value.String()
				}
				if store == "" {
					return nil
				}
				if !strings.HasPrefix(store, "redis://") && !strings.HasPrefix(store, "rediss://") {
					return fmt.Errorf("--cluster-store must be a redis:// URL")
				}
				if nodeID != "" && !cluster.ValidNodeID(nodeID) {
					return fmt.Errorf("--node-id %q: %w", nodeID, cluster.ErrBadNodeID)
				}
				var err error
				if secret, err = clusterSecret(secretFile, app.serviceToken); err != nil {
					return err
				}
				if advertise != "" {
					u, err := url.Parse(advertise)
					if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
						return fmt.Errorf("--advertise-url %q must be http(s)://host:port", advertise)
					}
				}
				return nil
			},
			start: func(ctx context.Context, app *App) error {
				if store == "" {
					return nil
				}
				openCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				var err error
				node, err = cluster.Open(openCtx, cluster.Config{RedisURL: store, NodeID: nodeID, Secret: secret, Log: app.Log.With("component", "cluster")})
				if err != nil {
					return err
				}
				app.Peers = peers{node, app.Log.With("component", "cluster")}
				app.CallPeers = callPeers{peers{node, app.Log.With("component", "cluster")}}
				if !sharesTickets {
					app.ReadyCheck("cluster_store_unavailable", node.Ping)
				}
				app.OnListen(func(addr net.Addr, tls bool) {
					u := advertise
					if u == "" {
						u = advertiseFrom(addr, tls)
					}
					if u == "" {
						app.Log.Error("cluster: the bound address is a wildcard; set --advertise-url so other nodes can forward to this one", "addr", addr.String())
						return
					}
					actx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					defer cancel()
					if err := node.Announce(actx, u); err != nil {
						app.Log.Error("cluster: announce failed", "err", err.Error())
						return
					}
					app.Log.Info("cluster: node announced", "node", node.ID(), "url", u)
				})
				return nil
			},
			stop: func(ctx context.Context) error {
				if node == nil {
					return nil
				}
				return node.Close(ctx)
			},
		}
	})
}

// clusterSecret is the key node entries are signed with: --cluster-secret-file's contents, else
// one derived from the service token (every node of a cluster shares it, and a forwarded request
// carries it already), so a cluster needs no second secret; under --insecure-no-auth the file is
// required.
func clusterSecret(file string, serviceToken []byte) ([]byte, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("read the cluster secret (--cluster-secret-file): %w", err)
		}
		b = bytes.TrimSpace(b)
		if len(b) < cluster.MinSecret {
			return nil, fmt.Errorf("the cluster secret in %s is %d bytes; it must be at least %d", file, len(b), cluster.MinSecret)
		}
		return b, nil
	}
	if len(serviceToken) == 0 {
		return nil, errors.New("a cluster (--cluster-store, or a Redis --ticket-store) without a service token needs --cluster-secret-file: " +
			"nodes forward requests only to entries signed with a shared secret")
	}
	mac := hmac.New(sha256.New, serviceToken) // a key of its own, not the token itself
	mac.Write([]byte("voiced cluster node entries"))
	return mac.Sum(nil), nil
}

// advertiseFrom is the URL of a bound address, "" for a wildcard (0.0.0.0, ::) that names no host.
func advertiseFrom(addr net.Addr, tls bool) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || tcp.IP.IsUnspecified() {
		return ""
	}
	scheme := "http"
	if tls {
		scheme = "https"
	}
	return scheme + "://" + tcp.String()
}

// peers is the speech service's view of the cluster: a request for a transcript that another
// node holds is forwarded there; when that node is gone, transcript_not_found.
type peers struct {
	node *cluster.Node
	log  *slog.Logger
}

func (p peers) NodeID() string { return p.node.ID() }

func (p peers) Forward(w http.ResponseWriter, r *http.Request, owner string) {
	p.forward(w, r, owner, "transcript", speechdoor.ErrTranscriptNodeGone)
}

// forward sends r to owner; when owner is gone or unreachable, gone answers the client.
func (p peers) forward(w http.ResponseWriter, r *http.Request, owner, what string, gone *door.Refusal) {
	p.node.Forward(w, r, owner, func(w http.ResponseWriter, err error) {
		if !errors.Is(err, cluster.ErrNodeGone) {
			// Announced but unreachable: it died within its TTL, or the network split.
			p.log.Warn("cluster: forwarding to the "+what+"'s node failed", "node", owner, "err", err.Error())
		}
		door.WriteError(w, gone)
	})
}

// callPeers is the WebRTC signal's view of the cluster: a hang-up or a sideband socket for a call
// that another node holds is forwarded there; when that node is gone, call_not_found.
type callPeers struct{ peers }

func (p callPeers) Forward(w http.ResponseWriter, r *http.Request, owner string) {
	p.forward(w, r, owner, "call", rtc.ErrCallNotFound)
}
