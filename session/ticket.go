package session

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"strings"
	"sync"
	"time"
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
// configuration the minting request carried (a session object in either dialect, applied as a
// session.update when the socket opens).
type Grant struct {
	Principal Principal       `json:"principal"`
	Session   json.RawMessage `json:"session,omitempty"`
	Model     string          `json:"model,omitempty"`
	Expires   time.Time       `json:"expires"`
}

// TicketStore keeps tickets. Take must be atomic: a ticket is handed out at most once, across
// every node sharing the store (Redis: GETDEL). Take of an unknown, used or expired ticket
// returns ErrTicketInvalid.
type TicketStore interface {
	Put(ctx context.Context, ticket string, g Grant, ttl time.Duration) error
	Take(ctx context.Context, ticket string) (Grant, error)
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

// Put stores g under ticket until now+ttl.
func (s *MemoryTickets) Put(_ context.Context, ticket string, g Grant, ttl time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for k, v := range s.m {
		if !now.Before(v.Expires) {
			delete(s.m, k)
		}
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
	delete(s.m, ticket)
	if !ok || !s.now().Before(g.Expires) {
		return Grant{}, ErrTicketInvalid
	}
	return g, nil
}
