package door

import "net/http"

// Peers lets any node serve what another node holds (several nodes behind one load balancer): the
// id of a transcript or a call names the node that holds it (NewID), and a request for another
// node's is forwarded there. package cluster implements it (wired in cmd/voiced).
type Peers interface {
	// NodeID is this node's id (a-z, 0-9, -; no dots), embedded in the ids of what it holds.
	NodeID() string
	// Forward serves r on node, the owner of what it names, answering the client itself: when
	// node is gone (or cannot be reached) it answers that the thing was not found.
	Forward(w http.ResponseWriter, r *http.Request, node string)
}

// ForwardedHeader marks a request that a peer forwarded (cluster sets it): its receiver serves it
// or refuses it, and never forwards it again.
const ForwardedHeader = "X-Voiced-Forwarded-By"

// Forwarded hands a request for another node's id (NewID with prefix) to that node through p and
// reports whether it did; p nil, an id that names no node, or this node: false, serve it here. A
// request a peer already forwarded is never forwarded again: this node is not the owner, so it
// answers notHere.
func Forwarded(p Peers, w http.ResponseWriter, r *http.Request, prefix, id string, notHere *Refusal) bool {
	if p == nil {
		return false
	}
	owner := IDNode(prefix, id)
	if owner == "" || owner == p.NodeID() {
		return false
	}
	if r.Header.Get(ForwardedHeader) != "" {
		WriteError(w, notHere)
		return true
	}
	p.Forward(w, r, owner)
	return true
}
