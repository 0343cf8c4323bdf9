package session

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/voiced/voiced/door"
)

func TestRedisTicketsOneUseAcrossClients(t *testing.T) {
	ctx := context.Background()
	a, b := twoRedisNodes(t)
	tk := NewTicket()
	if err := a.Put(ctx, tk, Grant{Principal: Principal{Subject: "alice"}}, 5*time.Second, 0); err != nil {
		t.Fatal(err)
	}
	// Ten redemptions race on two nodes: exactly one wins.
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func(s *RedisTickets) {
			defer wg.Done()
			g, err := s.Take(ctx, tk)
			if err == nil {
				mu.Lock()
				wins++
				mu.Unlock()
				if g.Principal.Subject != "alice" {
					t.Errorf("grant subject %q", g.Principal.Subject)
				}
			} else if !errors.Is(err, ErrTicketInvalid) {
				t.Errorf("Take: %v", err)
			}
		}([]*RedisTickets{a, b}[i%2])
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("%d redemptions succeeded, want exactly 1", wins)
	}
	short := NewTicket()
	a.Put(ctx, short, Grant{}, time.Millisecond, 0)
	time.Sleep(20 * time.Millisecond) // Redis expires the key on its own clock
	if _, err := b.Take(ctx, short); !errors.Is(err, ErrTicketInvalid) {
		t.Fatalf("expired Take = %v, want ErrTicketInvalid", err)
	}
}

// twoRedisNodes opens two ticket stores on the test Redis, as two nodes would (skipped without one).
func twoRedisNodes(t *testing.T) (a, b *RedisTickets) {
	t.Helper()
	url := os.Getenv("VOICED_TEST_REDIS_URL")
	if url == "" {
		t.Skip("VOICED_TEST_REDIS_URL unset: no Redis server to test against (make test starts one when the Debian package redis-server is installed: scripts/install-deps.sh --test)")
	}
	for _, s := range []**RedisTickets{&a, &b} {
		st, err := OpenRedisTickets(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		*s = st
	}
	return a, b
}

func TestRedisTicketsDownRefusesByName(t *testing.T) {
	_, err := OpenRedisTickets(context.Background(), "redis://127.0.0.1:1/0")
	if !errors.Is(err, ErrTicketStoreDown) {
		t.Fatalf("OpenRedisTickets on a closed port = %v, want ErrTicketStoreDown", err)
	}
	if _, err := OpenRedisTickets(context.Background(), "http://nope"); err == nil {
		t.Fatal("bad URL accepted")
	}
}

// TestRedisTicketsCapAcrossClients: the per-principal cap holds across nodes (two clients): a
// subject's live tickets are counted in Redis; a Take on either node gives one back; Peek leaves
// the ticket in place; the refusal names the wait until the subject's first ticket expires.
func TestRedisTicketsCapAcrossClients(t *testing.T) {
	ctx := context.Background()
	a, b := twoRedisNodes(t)
	g := Grant{Principal: Principal{Subject: "cap-" + NewTicket()}, Session: json.RawMessage(`{"instructions":"Hi."}`)}
	first, second := NewTicket(), NewTicket()
	if err := a.Put(ctx, first, g, 30*time.Second, 2); err != nil {
		t.Fatal(err)
	}
	if err := b.Put(ctx, second, g, 60*time.Second, 2); err != nil {
		t.Fatal(err)
	}
	err := a.Put(ctx, NewTicket(), g, 30*time.Second, 2)
	var ref *door.Refusal
	if !errors.As(err, &ref) || ref.Name() != "too_many_tickets" || ref.RetryAfter() < 28*time.Second || ref.RetryAfter() > 30*time.Second {
		t.Fatalf("a third ticket: %v, want too_many_tickets with the first's 30 s", err)
	}
	if err := b.Put(ctx, NewTicket(), Grant{Principal: Principal{Subject: g.Principal.Subject + "-other"}}, 30*time.Second, 2); err != nil {
		t.Fatalf("another subject: %v", err)
	}
	if got, err := b.Peek(ctx, first); err != nil || string(got.Session) != `{"instructions":"Hi."}` {
		t.Fatalf("Peek: %+v %v", got, err)
	}
	if _, err := b.Take(ctx, first); err != nil {
		t.Fatalf("Take after Peek: %v", err)
	}
	if _, err := a.Peek(ctx, first); !errors.Is(err, ErrTicketInvalid) {
		t.Fatalf("Peek after Take: %v, want ErrTicketInvalid", err)
	}
	if err := a.Put(ctx, NewTicket(), g, 30*time.Second, 2); err != nil {
		t.Fatalf("a ticket after one was taken: %v", err)
	}
	if err := a.Put(ctx, NewTicket(), g, 30*time.Second, 0); err != nil {
		t.Fatalf("no cap: %v", err)
	}
}
