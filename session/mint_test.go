package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/voiced/voiced/door"
)

// mintRefusal posts a mint and returns its status, refusal name and Retry-After.
func (ts *testServer) mintRefusal(t *testing.T, jwt string, body any) (int, string, string) {
	t.Helper()
	var rd *strings.Reader
	switch b := body.(type) {
	case string:
		rd = strings.NewReader(b)
	case nil:
		rd = strings.NewReader("")
	default:
		t.Fatalf("body %T", body)
	}
	req, _ := http.NewRequest("POST", ts.URL+"/v1/voice/session", rd)
	req.Header.Set("Authorization", "Bearer "+jwt)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct{ Name string }
	json.NewDecoder(resp.Body).Decode(&e)
	return resp.StatusCode, e.Name, resp.Header.Get("Retry-After")
}

// TestMintTicketCap: a principal holds at most MaxTicketsPerPrincipal live tickets; past it the
// mint is 429 too_many_tickets with the wait until its first ticket expires; redeeming or expiry
// makes room; another principal is not held back.
func TestMintTicketCap(t *testing.T) {
	ts := newTestServer(t, Config{MaxTicketsPerPrincipal: 3, TicketMintRate: -1})
	alice := token(t, ts.clock, nil)
	var tickets []string
	for range 3 {
		code, out := ts.post(t, "/v1/voice/session", alice, nil, nil)
		if code != 200 {
			t.Fatalf("mint: %d %v", code, out)
		}
		tickets = append(tickets, out["ticket"].(string))
		ts.clock.Advance(time.Second)
	}
	if code, name, retry := ts.mintRefusal(t, alice, nil); code != 429 || name != "too_many_tickets" || retry != "27" {
		t.Fatalf("4th mint: %d %q Retry-After %q, want 429 too_many_tickets after 27 s (the first expires 30 s after it was minted)", code, name, retry)
	}
	if code, _ := ts.post(t, "/v1/voice/session", token(t, ts.clock, map[string]any{"sub": "bob"}), nil, nil); code != 200 {
		t.Fatalf("another principal: %d, want 200", code)
	}
	if _, err := ts.cfg.Tickets.Take(context.Background(), tickets[1]); err != nil {
		t.Fatal(err)
	}
	if code, _ := ts.post(t, "/v1/voice/session", alice, nil, nil); code != 200 {
		t.Fatalf("a mint after one was redeemed: %d, want 200", code)
	}
	if code, name, _ := ts.mintRefusal(t, alice, nil); code != 429 || name != "too_many_tickets" {
		t.Fatalf("at the cap again: %d %q", code, name)
	}
	ts.clock.Advance(28 * time.Second) // the first has expired
	if code, _ := ts.post(t, "/v1/voice/session", alice, nil, nil); code != 200 {
		t.Fatalf("a mint after one expired: %d, want 200", code)
	}
}

// TestMintRate: a principal mints at most TicketMintRate a second, in bursts of its ticket cap;
// past it 429 ticket_rate_exceeded with Retry-After, whether or not its tickets were used.
func TestMintRate(t *testing.T) {
	ts := newTestServer(t, Config{MaxTicketsPerPrincipal: 4, TicketMintRate: 0.5})
	alice := token(t, ts.clock, nil)
	for i := range 4 {
		code, out := ts.post(t, "/v1/voice/session", alice, nil, nil)
		if code != 200 {
			t.Fatalf("mint %d: %d %v", i, code, out)
		}
		ts.cfg.Tickets.Take(context.Background(), out["ticket"].(string)) // used at once: the cap is not what refuses
	}
	if code, name, retry := ts.mintRefusal(t, alice, nil); code != 429 || name != "ticket_rate_exceeded" || retry != "2" {
		t.Fatalf("5th mint at once: %d %q Retry-After %q, want 429 ticket_rate_exceeded after 2 s", code, name, retry)
	}
	if code, _ := ts.post(t, "/v1/voice/session", token(t, ts.clock, map[string]any{"sub": "bob"}), nil, nil); code != 200 {
		t.Fatalf("another principal: %d, want 200", code)
	}
	ts.clock.Advance(2 * time.Second)
	if code, _ := ts.post(t, "/v1/voice/session", alice, nil, nil); code != 200 {
		t.Fatalf("a mint 2 s later: %d, want 200", code)
	}
}

// TestMintBodyAndStoredSession: the body is bounded (413 request_too_large past MaxMintBody) and the
// ticket keeps the validated session re-encoded, without what the conversation ignores.
func TestMintBodyAndStoredSession(t *testing.T) {
	ts := newTestServer(t, Config{})
	jwt := token(t, ts.clock, nil)
	big := fmt.Sprintf(`{"session":{"instructions":%q}}`, strings.Repeat("x", MaxMintBody))
	if code, name, _ := ts.mintRefusal(t, jwt, big); code != 413 || name != "request_too_large" {
		t.Fatalf("a %d KiB body: %d %q, want 413 request_too_large", len(big)>>10, code, name)
	}
	body := `{"expires_in": 60, "session": {
		"instructions":   "Be brief.",
		"tracing": {"workflow_name": "` + strings.Repeat("t", 64<<10) + `"},
		"prompt":  {"id": "` + strings.Repeat("p", 32<<10) + `"}
	}}`
	req, _ := http.NewRequest("POST", ts.URL+"/v1/voice/session", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+jwt)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var out struct{ Ticket string }
	json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("mint: %d", resp.StatusCode)
	}
	g, err := ts.cfg.Tickets.Peek(context.Background(), out.Ticket)
	if err != nil {
		t.Fatal(err)
	}
	if string(g.Session) != `{"instructions":"Be brief."}` {
		t.Fatalf("the ticket keeps %d bytes: %.120s…, want the validated session re-encoded", len(g.Session), g.Session)
	}
}

// TestMintRefusedOverQuota: a principal whose quota is used up is refused at the mint, by the
// refusal its redemption would meet, on every minting route; its body is not read.
func TestMintRefusedOverQuota(t *testing.T) {
	quota := door.NewRefusal(http.StatusTooManyRequests, "quota_exceeded", "this principal's daily seconds are used up")
	ts := newTestServer(t, Config{Engines: Engines{Admit: func(_ context.Context, p Principal) error {
		if p.Subject == "spent" {
			return quota
		}
		return nil
	}}})
	for _, path := range []string{"/v1/voice/session", "/v1/realtime/sessions", "/v1/realtime/client_secrets"} {
		code, out := ts.post(t, path, token(t, ts.clock, map[string]any{"sub": "spent"}), nil, nil)
		if code != 429 || out["name"] != "quota_exceeded" {
			t.Errorf("%s over quota: %d %v, want 429 quota_exceeded", path, code, out)
		}
		if code, out := ts.post(t, path, token(t, ts.clock, nil), nil, nil); code != 200 {
			t.Errorf("%s within quota: %d %v", path, code, out)
		}
	}
}

// TestTicketStoreCapAndPeek: MemoryTickets counts each subject's live tickets (Take and expiry
// give one back) and Peek leaves the ticket in place.
func TestTicketStoreCapAndPeek(t *testing.T) {
	clk := newClock()
	s := NewMemoryTickets(clk.Now)
	ctx := context.Background()
	alice := Grant{Principal: Principal{Subject: "alice"}}
	a, b, c := NewTicket(), NewTicket(), NewTicket()
	for _, tk := range []string{a, b} {
		if err := s.Put(ctx, tk, alice, 30*time.Second, 2); err != nil {
			t.Fatal(err)
		}
		clk.Advance(5 * time.Second)
	}
	err := s.Put(ctx, c, alice, 30*time.Second, 2)
	var ref *door.Refusal
	if !errors.As(err, &ref) || ref.Name() != "too_many_tickets" || ref.RetryAfter() != 20*time.Second {
		t.Fatalf("third Put: %v, want too_many_tickets after 20 s", err)
	}
	if err := s.Put(ctx, c, Grant{Principal: Principal{Subject: "bob"}}, 30*time.Second, 2); err != nil {
		t.Fatalf("bob: %v", err)
	}
	if g, err := s.Peek(ctx, a); err != nil || g.Principal.Subject != "alice" {
		t.Fatalf("Peek: %v %v", g, err)
	}
	if _, err := s.Take(ctx, a); err != nil {
		t.Fatalf("Take after Peek: %v", err)
	}
	if _, err := s.Peek(ctx, a); !errors.Is(err, ErrTicketInvalid) {
		t.Fatalf("Peek after Take: %v, want ErrTicketInvalid", err)
	}
	if err := s.Put(ctx, NewTicket(), alice, 30*time.Second, 2); err != nil {
		t.Fatalf("Put after a Take: %v", err)
	}
	clk.Advance(30 * time.Second) // all of alice's expire
	for range 2 {
		if err := s.Put(ctx, NewTicket(), alice, 30*time.Second, 2); err != nil {
			t.Fatalf("Put after expiry: %v", err)
		}
	}
}
