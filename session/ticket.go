package session

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/wire"
)

// TicketPrefix starts every ticket (OpenAI's ephemeral keys start the same way, which lets
// openai-node use one from a browser).
const TicketPrefix = "ek_"

// Ticket lifetimes: the default, and the range a request may ask for.
const (
	DefaultTicketTTL = 30 * time.Second
	MinTicketTTL     = 5 * time.Second
	MaxTicketTTL     = 10 * time.Minute
)

// Grant is what a ticket stands for: a principal this process already verified, and the session
// configuration the minting request carried (a session object in either dialect, validated and
// re-encoded by the mint (mint.go), applied as a session.update when the socket opens).
type Grant struct {
	Principal Principal       `json:"principal"`
	Session   json.RawMessage `json:"session,omitempty"`
	Model     string          `json:"model,omitempty"`
	// Type is a transcription session's: a key minted by POST /v1/realtime/transcription_sessions
	// (then Session is a beta transcription session object) or a handshake's ?intent=transcription.
	Type    wire.SessionType `json:"type,omitempty"`
	Expires time.Time        `json:"expires"`
}

// TicketStore keeps tickets. Take must be atomic: a ticket is handed out at most once, across
// every node sharing the store (Redis: GETDEL). Take of an unknown, used or expired ticket
// returns ErrTicketInvalid; Peek returns what Take would without taking it (a WebRTC call looks
// at its ticket before it reads the offer and takes it once the offer is answered).
//
// Put refuses (ErrTooManyTickets, with the Retry-After of the principal's first ticket to expire)
// when g.Principal.Subject already holds maxLive unexpired, untaken tickets; maxLive <= 0 is no
// cap. The count and the store are one atomic step, across nodes too.
type TicketStore interface {
	Put(ctx context.Context, ticket string, g Grant, ttl time.Duration, maxLive int) error
	Take(ctx context.Context, ticket string) (Grant, error)
	Peek(ctx context.Context, ticket string) (Grant, error)
}

// ErrTooManyTickets refuses a mint while the principal holds its --max-tickets-per-principal.
var ErrTooManyTickets = door.NewRefusal(http.StatusTooManyRequests, "too_many_tickets",
	"this principal holds as many unused tickets as it may (--max-tickets-per-principal): use one, or retry once one expires").WithRetryAfter(time.Second)

// tooManyTickets is ErrTooManyTickets with the wait until the principal's first ticket expires.
func tooManyTickets(wait time.Duration) error {
	return ErrTooManyTickets.WithRetryAfter(max(wait, time.Second))
}

// NewTicket returns "ek_" + 256 random bits, base64url without padding.
func NewTicket() string {
	var b [32]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return TicketPrefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// LooksLikeTicket tells a ticket from a JWT (which has dots).
func LooksLikeTicket(s string) bool {
	return strings.HasPrefix(s, TicketPrefix) && !strings.Contains(s, ".")
}

var _ TicketStore = (*MemoryTickets)(nil)

// MemoryTickets is the in-process TicketStore (one node). Expired tickets are swept on Put.
type MemoryTickets struct {
	now func() time.Time
	mu  sync.Mutex
	m   map[string]Grant
}

// NewMemoryTickets returns an empty store on the clock now (nil: time.Now).
func NewMemoryTickets(now func() time.Time) *MemoryTickets {
	if now == nil {
		now = time.Now
	}
	return &MemoryTickets{now: now, m: map[string]Grant{}}
}

// Put stores g under ticket until now+ttl, unless g's subject already holds maxLive tickets.
// Expired tickets are dropped as the subject's are counted.
func (s *MemoryTickets) Put(_ context.Context, ticket string, g Grant, ttl time.Duration, maxLive int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	sub := g.Principal.Subject
	held, first := 0, time.Time{} // sub's live tickets, and when the first of them expires
	for k, v := range s.m {
		switch {
		case !now.Before(v.Expires):
			delete(s.m, k)
		case v.Principal.Subject == sub:
			held++
			if first.IsZero() || v.Expires.Before(first) {
				first = v.Expires
			}
		}
	}
	if maxLive > 0 && held >= maxLive {
		return tooManyTickets(first.Sub(now))
	}
	g.Expires = now.Add(ttl)
	s.m[ticket] = g
	return nil
}

// Take removes and returns the grant; a second Take, or one after expiry, is ErrTicketInvalid.
func (s *MemoryTickets) Take(_ context.Context, ticket string) (Grant, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.m[ticket]
	if !ok {
		return Grant{}, ErrTicketInvalid
	}
	delete(s.m, ticket)
	if !s.now().Before(g.Expires) {
		return Grant{}, ErrTicketInvalid
	}
	return g, nil
}

// Peek returns the grant without taking it; unknown, used or expired is ErrTicketInvalid.
func (s *MemoryTickets) Peek(_ context.Context, ticket string) (Grant, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.m[ticket]
	if !ok || !s.now().Before(g.Expires) {
		return Grant{}, ErrTicketInvalid
	}
	return g, nil
}
