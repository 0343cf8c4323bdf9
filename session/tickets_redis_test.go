package session

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"
)

func TestRedisTicketsOneUseAcrossClients(t *testing.T) {
	url := os.Getenv("VOICED_TEST_REDIS_URL")
	if url == "" {
		t.Skip("VOICED_TEST_REDIS_URL unset: no Redis server to test against (make test starts one when redis-server is installed)")
	}
	ctx := context.Background()
	a, err := OpenRedisTickets(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := OpenRedisTickets(ctx, url) // a second node
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	tk := NewTicket()
	if err := a.Put(ctx, tk, Grant{Principal: Principal{Subject: "alice"}}, 5*time.Second); err != nil {
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
	a.Put(ctx, short, Grant{}, time.Millisecond)
	time.Sleep(20 * time.Millisecond) // Redis expires the key on its own clock
	if _, err := b.Take(ctx, short); !errors.Is(err, ErrTicketInvalid) {
		t.Fatalf("expired Take = %v, want ErrTicketInvalid", err)
	}
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
