package door

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
)

// NewID is a fresh id for something one node holds (a transcript, a WebRTC call):
// prefix + node + "." + hex when node is set, so any node can tell which one owns it, else
// prefix + hex. n random bytes; both forms are URL-safe as they are (a path segment, a query value).
func NewID(prefix, node string, n int) string {
	b := make([]byte, n)
	rand.Read(b)
	if node != "" {
		return prefix + node + "." + hex.EncodeToString(b)
	}
	return prefix + hex.EncodeToString(b)
}

// IDNode is the node a NewID id names ("" when it names none, or has another prefix).
func IDNode(prefix, id string) string {
	rest, ok := strings.CutPrefix(id, prefix)
	if !ok {
		return ""
	}
	node, _, ok := strings.Cut(rest, ".")
	if !ok {
		return ""
	}
	return node
}
