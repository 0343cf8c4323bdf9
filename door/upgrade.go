package door

import (
	"context"
	"encoding/base64"
	"net/http"
	"strings"

	"github.com/coder/websocket"
)

// ErrNotUpgrade refuses a request on a socket route that is not a WebSocket handshake (a plain
// GET or HEAD: a link previewer, a crawler, a health probe pointed at the wrong path). It is
// answered before admission, so such a request never spends a ticket or holds a slot.
var ErrNotUpgrade = NewRefusal(http.StatusUpgradeRequired, "websocket_upgrade_required",
	"this route is a WebSocket: open it with a WebSocket handshake (GET, Connection: Upgrade, Upgrade: websocket, Sec-WebSocket-Version: 13)")

// IsUpgrade reports whether r is a WebSocket opening handshake that websocket.Accept will take:
// the same request checks, made before anything is spent.
func IsUpgrade(r *http.Request) bool {
	if !r.ProtoAtLeast(1, 1) || r.Method != http.MethodGet ||
		!headerHasToken(r.Header, "Connection", "upgrade") || !headerHasToken(r.Header, "Upgrade", "websocket") ||
		r.Header.Get("Sec-WebSocket-Version") != "13" {
		return false
	}
	keys := r.Header.Values("Sec-WebSocket-Key")
	if len(keys) != 1 {
		return false
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(keys[0]))
	return err == nil && len(key) == 16
}

// headerHasToken reports whether the comma-separated header key lists token (case-insensitive).
func headerHasToken(h http.Header, key, token string) bool {
	for _, v := range h.Values(key) {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// Tracker registers a socket for graceful shutdown (*Sockets is one).
type Tracker interface {
	Enter(parent context.Context) (ctx context.Context, leave func(), err error)
}

// Kit is what a WebSocket door opens with: the origin policy, the shutdown registry and how a
// refusal is answered.
type Kit struct {
	Origins Origins
	Sockets Tracker // nil: sockets are not tracked for shutdown
	// Refuse answers a refusal before the upgrade (it counts it, and writes the door's body);
	// nil writes WriteError.
	Refuse func(w http.ResponseWriter, err error)
}

// Upgrade admits one WebSocket, in the one order every door uses: the origin and the handshake
// itself (IsUpgrade: before anything is spent), then admit (the door's own checks: readiness, capacity, credential, quota; it returns
// what releases its slot), then a place in the shutdown registry, then the upgrade. Every refusal
// is answered by name and ok is false. done releases all of it; ctx is detached from the request
// and cancelled when the shutdown grace ends. opts may be nil; the origin was checked here, so
// Accept does not check it again.
func (k Kit) Upgrade(w http.ResponseWriter, r *http.Request, admit func() (release func(), err error), opts *websocket.AcceptOptions) (ctx context.Context, conn *websocket.Conn, done func(), ok bool) {
	refuse := k.Refuse
	if refuse == nil {
		refuse = WriteError
	}
	if err := k.Origins.Check(r); err != nil {
		refuse(w, err)
		return nil, nil, nil, false
	}
	if !IsUpgrade(r) {
		w.Header().Set("Connection", "Upgrade") // RFC 9110 §15.5.22: a 426 names the protocol to upgrade to
		w.Header().Set("Upgrade", "websocket")
		refuse(w, ErrNotUpgrade)
		return nil, nil, nil, false
	}
	release := func() {}
	if admit != nil {
		rel, err := admit()
		if err != nil {
			refuse(w, err)
			return nil, nil, nil, false
		}
		if rel != nil {
			release = rel
		}
	}
	ctx = context.WithoutCancel(r.Context())
	leave := func() {}
	if k.Sockets != nil {
		var err error
		ctx, leave, err = k.Sockets.Enter(ctx)
		if err != nil {
			release()
			refuse(w, err)
			return nil, nil, nil, false
		}
	}
	var o websocket.AcceptOptions
	if opts != nil {
		o = *opts
	}
	o.InsecureSkipVerify, o.OriginPatterns = true, nil // the origin was checked above
	conn, err := websocket.Accept(w, r, &o)
	if err != nil { // Accept has answered the client
		leave()
		release()
		return nil, nil, nil, false
	}
	return ctx, conn, func() { leave(); release() }, true
}
