package wire

import (
	"net/http"
	"strings"
)

// Dialect is the shape of the protocol one connection speaks.
type Dialect uint8

const (
	// GA is the gpt-realtime protocol (Aug 2025): output_audio names,
	// conversation.item.added/done, session.type and session.audio.
	GA Dialect = iota
	// Beta is the realtime=v1 protocol: response.audio.*, conversation.item.created,
	// flat session fields.
	Beta
)

func (d Dialect) String() string {
	if d == Beta {
		return "beta"
	}
	return "ga"
}

// BetaSubprotocol is the subprotocol browsers offer for the beta dialect.
const BetaSubprotocol = "openai-beta.realtime-v1"

// DialectFromHandshake decides a connection's dialect before the upgrade:
// Beta when the request carries the header OpenAI-Beta: realtime=v1 or offers
// the openai-beta.realtime-v1 subprotocol, GA otherwise. openai-node
// 5.18–5.23 sent the beta marker while speaking GA, so the first session.update
// may still change it (SessionUpdate.Redecide).
func DialectFromHandshake(h http.Header) Dialect {
	for _, v := range h.Values("OpenAI-Beta") {
		for part := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(part), "realtime=v1") {
				return Beta
			}
		}
	}
	for _, v := range h.Values("Sec-WebSocket-Protocol") {
		for part := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(part), BetaSubprotocol) {
				return Beta
			}
		}
	}
	return GA
}
