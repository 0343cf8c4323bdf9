package cluster

import (
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"log/slog"
	"net"
	"net/http"

	"github.com/voiced/voiced/door"
)

// Peers is a door's view of the cluster (speechcore.Peers, rtc.Peers): a request for a resource
// another node holds is forwarded to that node; when the node is gone or cannot be reached, the
// door's not-found refusal answers the client.
type Peers struct {
	node *Node
	what string // what the door serves ("transcript", "call"), for the log
	gone error  // the answer when the owner is gone (transcript_not_found, call_not_found)
	log  *slog.Logger
}

// Peers is this node as a door's peers: what names the door's resource in the log, gone is the
// refusal written when the owner is gone or unreachable.
func (n *Node) Peers(what string, gone error) Peers {
	return Peers{node: n, what: what, gone: gone, log: n.cfg.Log}
}

// NodeID is this node's id.
func (p Peers) NodeID() string { return p.node.ID() }

// Forward sends r to owner; when owner is gone or unreachable, the door's refusal answers the
// client (an owner announced but unreachable, that died within its TTL or is cut off by the
// network, is logged).
func (p Peers) Forward(w http.ResponseWriter, r *http.Request, owner string) {
	p.node.Forward(w, r, owner, func(w http.ResponseWriter, err error) {
		if !errors.Is(err, ErrNodeGone) {
			p.log.Warn("cluster: forwarding to the "+p.what+"'s node failed", "node", owner, "err", err.Error())
		}
		door.WriteError(w, p.gone)
	})
}

// DeriveSecret is the cluster secret derived from the service token, for a cluster given no
// secret of its own: every node shares the token (a forwarded request carries it already), so a
// cluster needs no second secret. It is a key of its own, not the token itself.
func DeriveSecret(serviceToken []byte) []byte {
	mac := hmac.New(sha256.New, serviceToken)
	mac.Write([]byte("voiced cluster node entries"))
	return mac.Sum(nil)
}

// AdvertiseURL is the URL peers reach a bound address at, "" for a wildcard (0.0.0.0, ::) that
// names no host.
func AdvertiseURL(addr net.Addr, tls bool) string {
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
