package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/voiced/voiced/door"
)

// ErrTicketStoreDown means the shared ticket store could not be reached: minting and redeeming
// fail closed by name (503 ticket_store_unavailable); conversations already admitted go on.
var ErrTicketStoreDown = &door.Refusal{Status: http.StatusServiceUnavailable, Name: "ticket_store_unavailable",
	Message: "the ticket store is unavailable; retry shortly", RetryAfter: time.Second, Reason: door.ReasonAuth}

var _ TicketStore = (*RedisTickets)(nil)

// RedisTickets shares tickets between nodes: a ticket minted on one is redeemed once on any, and
// GETDEL makes the redemption atomic (a second Take anywhere finds nothing).
type RedisTickets struct {
	c      *redis.Client
	prefix string
}

// OpenRedisTickets connects to url (redis://[user:pass@]host:port/db) and pings it, so a store that
// is down refuses the start by name.
func OpenRedisTickets(ctx context.Context, url string) (*RedisTickets, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("--ticket-store %q: %w", url, err)
	}
	c := redis.NewClient(opt)
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		return nil, fmt.Errorf("%w: redis at %s: %v", ErrTicketStoreDown, opt.Addr, err)
	}
	return &RedisTickets{c: c, prefix: "voiced:ticket:"}, nil
}

// Put stores g under ticket for ttl.
func (s *RedisTickets) Put(ctx context.Context, ticket string, g Grant, ttl time.Duration) error {
	g.Expires = time.Now().Add(ttl)
	b, err := json.Marshal(g)
	if err != nil {
		return fmt.Errorf("encode grant: %w", err)
	}
	if err := s.c.Set(ctx, s.prefix+ticket, b, ttl).Err(); err != nil {
		return fmt.Errorf("%w: %v", ErrTicketStoreDown, err)
	}
	return nil
}

// Take removes and returns the grant with GETDEL; unknown, used or expired is ErrTicketInvalid.
func (s *RedisTickets) Take(ctx context.Context, ticket string) (Grant, error) {
	b, err := s.c.GetDel(ctx, s.prefix+ticket).Bytes()
	if errors.Is(err, redis.Nil) {
		return Grant{}, ErrTicketInvalid
	}
	if err != nil {
		return Grant{}, fmt.Errorf("%w: %v", ErrTicketStoreDown, err)
	}
	var g Grant
	if err := json.Unmarshal(b, &g); err != nil {
		return Grant{}, fmt.Errorf("decode grant: %w", err)
	}
	if !time.Now().Before(g.Expires) {
		return Grant{}, ErrTicketInvalid
	}
	return g, nil
}

// Close closes the connection pool.
func (s *RedisTickets) Close() error { return s.c.Close() }

// Ping checks that Redis answers (the readiness probe asks it).
func (s *RedisTickets) Ping(ctx context.Context) error { return s.c.Ping(ctx).Err() }
