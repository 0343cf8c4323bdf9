package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/voiced/voiced/cluster"
	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/rtc"
	"github.com/voiced/voiced/speechcore"
)

// The cluster component: when several nodes share a Redis (--cluster-store, by default the
// --ticket-store), each announces where its peers reach it, and a half-duplex transcript opened
// on one node can be pushed to and closed on any other, and a WebRTC call answered on one node can
// be hung up or given a sideband socket on any other (the request is forwarded to its owner).
func init() {
	register("cluster", orderStores, func() *component {
		var (
			store, nodeID, advertise string
			sharesTickets            bool // the cluster store is the ticket store (one readiness check)
			node                     *cluster.Node
		)
		return &component{
			flags: func(fs *flag.FlagSet) {
				fs.StringVar(&store, "cluster-store", "", "redis://… where nodes find each other (default: the --ticket-store when it is Redis; unset: a single node)")
				fs.StringVar(&nodeID, "node-id", "", "this node's id in the cluster (a-z, 0-9, -; default: random at each start)")
				fs.StringVar(&advertise, "advertise-url", "", "the URL other nodes reach this one at (http://10.0.0.5:8200); default: the bound address when it is not a wildcard")
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
				node, err = cluster.Open(openCtx, cluster.Config{RedisURL: store, NodeID: nodeID, Log: app.Log.With("component", "cluster")})
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
	p.forward(w, r, owner, "transcript", speechcore.ErrTranscriptNodeGone)
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
