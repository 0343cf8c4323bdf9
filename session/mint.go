package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/wire"
)

// Minting bounds. A ticket holds its principal and a session object until it is redeemed or
// expires (up to MaxTicketTTL), so what one principal may make a node hold is
// MaxTicketsPerPrincipal × MaxMintBody, and how fast, TicketMintRate.
const (
	// MaxMintBody bounds a minting request's body, read only once its JWT has verified: a session
	// object's instructions and tools. 128 KiB is about 32k tokens of English, the whole context
	// of OpenAI's realtime models (gpt-realtime: 32,000 tokens): a session object longer than that
	// could not be used by the model anyway. (A client may still send a bigger session.update on the
	// open socket, where the conversation's own limits apply.)
	MaxMintBody = 128 << 10
	// DefaultMaxTicketsPerPrincipal is the unused, unexpired tickets one principal (JWT subject)
	// may hold at once: a browser app holds one per page it is about to open; 20 leaves room for
	// a user with several tabs and retries.
	DefaultMaxTicketsPerPrincipal = 20
	// DefaultTicketMintRate is the mints per second one principal may sustain (bursts of up to its
	// ticket cap): a person opens a conversation every few seconds at most.
	DefaultTicketMintRate = 1.0
)

// Refusals of the minting routes.
var (
	ErrMintBodyTooLarge = door.NewRefusal(http.StatusRequestEntityTooLarge, "request_too_large",
		fmt.Sprintf("a ticket's request body may be at most %d KiB (a session object: instructions and tools)", MaxMintBody>>10))
	ErrMintRate = door.NewRefusal(http.StatusTooManyRequests, "ticket_rate_exceeded",
		"this principal asks for tickets faster than it may (--ticket-mint-rate); retry shortly").WithRetryAfter(time.Second)
)

// minter verifies a minting request's principal and spends its allowance, before the body is
// read: the JWT (401/403), the principal's mint rate (429 ticket_rate_exceeded), its quota (429
// quota_exceeded, the refusal the redemption would meet: a ticket that cannot open a
// conversation is not minted).
func (s *Server) minter(r *http.Request) (Principal, error) {
	p, err := s.principal(r)
	if err != nil {
		return Principal{}, err
	}
	if wait, ok := s.mints.take(p.Subject, 1, s.cfg.Now()); !ok {
		return Principal{}, ErrMintRate.WithRetryAfter(max(wait, time.Second))
	}
	if admit := s.cfg.Engines.Admit; admit != nil {
		if err := admit(r.Context(), p); err != nil {
			return Principal{}, err
		}
	}
	return p, nil
}

// readMintBody decodes an optional JSON body (empty is fine) of at most MaxMintBody into v.
func readMintBody(r *http.Request, v any) error {
	b, err := io.ReadAll(io.LimitReader(r.Body, MaxMintBody+1))
	if err != nil {
		return door.Refuse(ErrBadRequest, "the request body could not be read")
	}
	if len(b) > MaxMintBody {
		return ErrMintBodyTooLarge
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, v); err != nil {
		return door.Refuse(ErrBadRequest, "the request body is not the JSON object expected: "+err.Error())
	}
	return nil
}

// ticketSession checks a session object carried by a minting request by applying it to a fresh
// session as the conversation will (a session.update in dialect d). It returns the effective
// session for the answer, and what the ticket keeps: the object re-encoded (compact), without the
// fields the conversation accepts and ignores (tracing, prompt, client_secret…), nil when nothing
// is left.
func ticketSession(raw json.RawMessage, d wire.Dialect, model string) (wire.Session, json.RawMessage, error) {
	sess := wire.NewSession(wire.NewID("sess_"), model)
	if len(raw) == 0 || string(raw) == "null" {
		return sess, nil, nil
	}
	u, err := wire.DecodeSession(raw, d)
	if err == nil {
		err = sess.ApplyOpen(u)
	}
	if err != nil {
		var we *wire.Error
		if errors.As(err, &we) {
			return sess, nil, door.Refuse(ErrBadRequest, we.Message)
		}
		return sess, nil, door.Refuse(ErrBadRequest, "the session object is not valid")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil { // decoded above: an object
		return sess, nil, door.Refuse(ErrBadRequest, "the session object is not valid")
	}
	for k := range fields {
		if slices.Contains(u.Session.Ignored, "session."+k) {
			delete(fields, k)
		}
	}
	if len(fields) == 0 {
		return sess, nil, nil
	}
	kept, err := json.Marshal(fields) // compacts each value
	if err != nil {
		return sess, nil, fmt.Errorf("re-encode the session: %w", err)
	}
	return sess, kept, nil
}

// CheckSession refuses (400 invalid_request, with the realtime error's message) a session object
// the conversation could not apply when it starts in dialect d: a WebRTC call checks the session
// it will run with (its ticket's and its own) before it answers and spends the ticket.
func CheckSession(raw json.RawMessage, d wire.Dialect) error {
	_, _, err := ticketSession(raw, d, "")
	return err
}

// writeMintError answers a minting request's failure; only the server's own (a store away, a
// bug) are logged at ERROR: what the client caused is its answer.
func (s *Server) writeMintError(w http.ResponseWriter, err error) {
	if door.AsRefusal(err).Status() >= 500 {
		s.log.Error("mint ticket", "err", err)
	}
	writeRefusal(w, err)
}
