package rtc

import (
	"net/http"

	"github.com/voiced/voiced/door"
)

// Peers lets any node end or attach to a call held by another (several nodes behind one load
// balancer): a call's id names the node that holds its peer connection, and a request for another
// node's call — hang-up, or the sideband socket (its WebSocket upgrade included) — is forwarded
// there. package cluster implements it (wired in cmd/voiced).
type Peers interface {
	// NodeID is this node's id (a-z, 0-9, -; no dots), embedded in the ids of its calls.
	NodeID() string
	// Forward serves r on node, the owner of the call it names, answering the client itself:
	// when node is gone (or cannot be reached) it answers call_not_found.
	Forward(w http.ResponseWriter, r *http.Request, node string)
}

// ForwardedHeader marks a request that a peer forwarded (cluster.ForwardedHeader): its receiver
// serves it or refuses it, and never forwards it again.
const ForwardedHeader = "X-Voiced-Forwarded-By"

// newCallID is a fresh call id: rtc_<node>.<hex> when the signal has Peers (so any node can find
// the owner), rtc_<hex> otherwise.
func (s *Signal) newCallID() string {
	node := ""
	if s.Peers != nil {
		node = s.Peers.NodeID()
	}
	return door.NewID("rtc_", node, 12)
}

// callOwner is the node named in a call id ("" when it names none).
func callOwner(id string) string { return door.IDNode("rtc_", id) }

// forwarded hands a request for another node's call to that node (Peers.Forward) and reports
// whether it did. A request a peer already forwarded is never forwarded again: a node that is not
// the owner answers it call_not_found.
func (s *Signal) forwarded(w http.ResponseWriter, r *http.Request, id string) bool {
	if s.Peers == nil {
		return false
	}
	owner := callOwner(id)
	if owner == "" || owner == s.Peers.NodeID() {
		return false
	}
	if r.Header.Get(ForwardedHeader) != "" {
		door.WriteError(w, ErrCallNotFound)
		return true
	}
	s.Peers.Forward(w, r, owner)
	return true
}
