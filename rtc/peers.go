package rtc

import (
	"net/http"

	"github.com/voiced/voiced/door"
)

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

// forwarded hands a request for another node's call to that node (door.Forwarded) and reports
// whether it did; a request a peer forwarded to a node that is not the owner is answered
// call_not_found.
func (s *Signal) forwarded(w http.ResponseWriter, r *http.Request, id string) bool {
	return door.Forwarded(s.Peers, w, r, "rtc_", id, ErrCallNotFound)
}
