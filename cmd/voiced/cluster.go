package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/voiced/voiced/cluster"
	"github.com/voiced/voiced/rtc"
	"github.com/voiced/voiced/speechcore"
)

// clusterConfig is the cluster's flags: when several nodes share a Redis (--cluster-store, by
// default the --ticket-store), each announces where its peers reach it, and a half-duplex
// transcript opened on one node can be pushed to and closed on any other, and a WebRTC call
// answered on one node can be hung up or given a sideband socket on any other (the request is
// forwarded to its owner).
type clusterConfig struct {
	store, nodeID, advertise, secretFile string
	secret                               []byte
	sharesTickets                        bool // the cluster store is the ticket store (one readiness check)
}

func (c *clusterConfig) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.store, "cluster-store", "", "redis://… where nodes find each other (default: the --ticket-store when it is Redis; unset: a single node)")
	fs.StringVar(&c.nodeID, "node-id", "", "this node's id in the cluster (a-z, 0-9, -; default: random at each start)")
	fs.StringVar(&c.advertise, "advertise-url", "", "the URL other nodes reach this one at (http://10.0.0.5:8200); default: the bound address when it is not a wildcard")
	fs.StringVar(&c.secretFile, "cluster-secret-file", "", "file holding the secret (32 bytes or more, surrounding whitespace trimmed) every node signs its cluster entry with and checks its peers' by; a node forwards requests, credentials included, only to a signed entry (default: derived from the service token)")
}

// validate takes the cluster store (default ticketStore, --ticket-store) and the secret (from
// --cluster-secret-file, else derived from serviceToken).
func (c *clusterConfig) validate(ticketStore string, serviceToken []byte) error {
	if c.store == "" {
		c.store = ticketStore
	}
	c.sharesTickets = c.store == ticketStore
	if c.store == "" {
		return nil
	}
	if !strings.HasPrefix(c.store, "redis://") && !strings.HasPrefix(c.store, "rediss://") {
		return fmt.Errorf("--cluster-store must be a redis:// URL")
	}
	if c.nodeID != "" && !cluster.ValidNodeID(c.nodeID) {
		return fmt.Errorf("--node-id %q: %w", c.nodeID, cluster.ErrBadNodeID)
	}
	var err error
	if c.secret, err = clusterSecret(c.secretFile, serviceToken); err != nil {
		return err
	}
	if c.advertise != "" {
		u, err := url.Parse(c.advertise)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--advertise-url %q must be http(s)://host:port", c.advertise)
		}
	}
	return nil
}

// start joins the cluster (nil on a single node): it announces this node once the listener is
// bound, and leaves at shutdown.
func (c *clusterConfig) start(ctx context.Context, app *App) (*cluster.Node, error) {
	if c.store == "" {
		return nil, nil
	}
	openCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	node, err := cluster.Open(openCtx, cluster.Config{RedisURL: c.store, NodeID: c.nodeID, Secret: c.secret, Log: app.Log.With("component", "cluster")})
	if err != nil {
		return nil, err
	}
	if !c.sharesTickets {
		app.ReadyCheck("cluster_store_unavailable", node.Ping)
	}
	app.OnListen(func(addr net.Addr, tls bool) {
		u := c.advertise
		if u == "" {
			u = cluster.AdvertiseURL(addr, tls)
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
	app.OnShutdown(node.Close)
	return node, nil
}

// clusterPeers are the doors' views of the cluster (nil, nil on a single node): a transcript or
// a call another node holds is forwarded there; when that node is gone, transcript_not_found or
// call_not_found.
func clusterPeers(node *cluster.Node) (speechcore.Peers, rtc.Peers) {
	if node == nil {
		return nil, nil
	}
	return node.Peers("transcript", speechcore.ErrTranscriptNodeGone), node.Peers("call", rtc.ErrCallNotFound)
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
	return cluster.DeriveSecret(serviceToken), nil
}
