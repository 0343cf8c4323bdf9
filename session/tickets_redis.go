package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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
var ErrTicketStoreDown = door.NewRefusal(http.StatusServiceUnavailable, "ticket_store_unavailable",
	"the ticket store is unavailable; retry shortly").WithRetryAfter(time.Second).WithReason(door.ReasonAuth)

var _ TicketStore = (*RedisTickets)(nil)

// RedisTickets shares tickets between nodes: a ticket minted on one is redeemed once on any, and
// GETDEL makes the redemption atomic (a second Take anywhere finds nothing).
//
// Each subject's live tickets are a sorted set (voiced:tickets-of:<sha256 of the subject>, member
// the ticket, score its expiry in unix ms), so the per-principal cap holds across nodes: Put
// counts and stores in one script. The set expires MaxTicketTTL after its last Put, so a subject
// that stops minting leaves nothing behind.
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

// putScript: KEYS[1] the ticket, KEYS[2] the subject's set; ARGV now ms, ttl ms, max live (0: no
// cap), the grant, the set's lifetime ms. Returns 0 when stored, else the ms until the subject's
// first ticket expires (at least 1).
var putScript = redis.NewScript(`
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[1])
local max = tonumber(ARGV[3])
if max > 0 and redis.call('ZCARD', KEYS[2]) >= max then
  local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  return math.max(1, tonumber(first[2]) - tonumber(ARGV[1]))
end
redis.call('SET', KEYS[1], ARGV[4], 'PX', ARGV[2])
redis.call('ZADD', KEYS[2], tonumber(ARGV[1]) + tonumber(ARGV[2]), KEYS[1])
redis.call('PEXPIRE', KEYS[2], ARGV[5])
return 0
`)

func (s *RedisTickets) liveKey(subject string) string {
	sum := sha256.Sum256([]byte(subject)) // a subject is any string a token carries: the key stays short
	return "voiced:tickets-of:" + hex.EncodeToString(sum[:16])
}

// Put stores g under ticket for ttl, unless g's subject already holds maxLive live tickets.
func (s *RedisTickets) Put(ctx context.Context, ticket string, g Grant, ttl time.Duration, maxLive int) error {
	now := time.Now()
	g.Expires = now.Add(ttl)
	b, err := json.Marshal(g)
	if err != nil {
		return fmt.Errorf("encode grant: %w", err)
	}
	wait, err := putScript.Run(ctx, s.c, []string{s.prefix + ticket, s.liveKey(g.Principal.Subject)},
		now.UnixMilli(), ttl.Milliseconds(), max(maxLive, 0), b, MaxTicketTTL.Milliseconds()).Int64()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrTicketStoreDown, err)
	}
	if wait > 0 {
		return tooManyTickets(time.Duration(wait) * time.Millisecond)
	}
	return nil
}

// Take removes and returns the grant with GETDEL; unknown, used or expired is ErrTicketInvalid.
func (s *RedisTickets) Take(ctx context.Context, ticket string) (Grant, error) {
	g, err := decodeGrant(s.c.GetDel(ctx, s.prefix+ticket).Bytes())
	if err != nil {
		return Grant{}, err
	}
	// No longer live. Best effort: a member left behind (the store failing now) is swept by its
	// score when it would have expired.
	s.c.ZRem(ctx, s.liveKey(g.Principal.Subject), s.prefix+ticket)
	if !time.Now().Before(g.Expires) {
		return Grant{}, ErrTicketInvalid
	}
	return g, nil
}

// Peek returns the grant with GET, leaving it in place; unknown, used or expired is
// ErrTicketInvalid.
func (s *RedisTickets) Peek(ctx context.Context, ticket string) (Grant, error) {
	g, err := decodeGrant(s.c.Get(ctx, s.prefix+ticket).Bytes())
	if err != nil {
		return Grant{}, err
	}
	if !time.Now().Before(g.Expires) {
		return Grant{}, ErrTicketInvalid
	}
	return g, nil
}

// decodeGrant reads a grant from a GET's answer: nothing there is ErrTicketInvalid, a failed
// read ErrTicketStoreDown.
func decodeGrant(b []byte, err error) (Grant, error) {
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
	return g, nil
}

// Close closes the connection pool.
func (s *RedisTickets) Close() error { return s.c.Close() }

// Ping checks that Redis answers (the readiness probe asks it).
func (s *RedisTickets) Ping(ctx context.Context) error { return s.c.Ping(ctx).Err() }
