package tests

import (
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// storeLink is a TCP forwarder between voiced and one of its stores (Postgres, Redis): cut makes
// the store go away as a crashed server or a broken network does (every open connection is
// dropped, every new one is closed at once), restore brings it back on the same address.
// Deterministic where stopping the shared server is not: other tests use it.
type storeLink struct {
	t      testing.TB
	ln     net.Listener
	target string

	mu    sync.Mutex
	away  bool
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup // the accept loop and every pipe
}

func startStoreLink(t testing.TB, target string) *storeLink {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &storeLink{t: t, ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	l.wg.Go(l.accept)
	t.Cleanup(l.close)
	return l
}

func (l *storeLink) addr() string { return l.ln.Addr().String() }

func (l *storeLink) accept() {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		l.mu.Lock()
		away := l.away
		l.mu.Unlock()
		if away {
			c.Close()
			continue
		}
		up, err := net.DialTimeout("tcp", l.target, 5*time.Second)
		if err != nil {
			c.Close()
			continue
		}
		l.mu.Lock()
		l.conns[c], l.conns[up] = struct{}{}, struct{}{}
		l.mu.Unlock()
		pipe := func(dst, src net.Conn) {
			io.Copy(dst, src)
			dst.Close()
			src.Close()
			l.mu.Lock()
			delete(l.conns, dst)
			delete(l.conns, src)
			l.mu.Unlock()
		}
		l.wg.Go(func() { pipe(up, c) })
		l.wg.Go(func() { pipe(c, up) })
	}
}

// cut drops every connection and refuses new ones until restore.
func (l *storeLink) cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.away = true
	for c := range l.conns {
		c.Close()
	}
}

func (l *storeLink) restore() {
	l.mu.Lock()
	l.away = false
	l.mu.Unlock()
}

func (l *storeLink) close() {
	l.ln.Close()
	l.cut()
	l.wg.Wait()
}

// viaLink rewrites a postgres:// or redis:// URL to reach its host through the link.
func viaLink(t testing.TB, raw string, link func(target string) *storeLink) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = link(u.Host).addr()
	return u.String()
}

// readyBecomes polls /health/ready until it answers want (status and name) or 10 s pass.
func (s *server) readyBecomes(t testing.TB, status int, name string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, n := s.probe("/health/ready")
		if st == status && n == name {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/health/ready: %d %q, want %d %q", st, n, status, name)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestFaultsPostgresAway: the Postgres meter store goes away while a conversation runs (a
// forwarder between voiced and Postgres drops every connection and refuses new ones). The
// conversation goes on; /health/ready says meter_store_unavailable; the counts are kept and
// retried; when the store is back /v1/usage equals the audio served, to the sample.
func TestFaultsPostgresAway(t *testing.T) {
	checkLeaks(t)
	dsn := os.Getenv("VOICED_TEST_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("VOICED_TEST_POSTGRES_DSN is unset: PostgreSQL (Debian package postgresql, scripts/install-deps.sh --test) started by scripts/test-services.sh")
	}
	var link *storeLink
	proxied := viaLink(t, dsn, func(target string) *storeLink { link = startStoreLink(t, target); return link })
	s := startRealtime(t, serverOpts{Args: []string{"--meter-dsn", proxied}})
	s.readyBecomes(t, http.StatusOK, "")
	user := "pg-away-" + randHex(4)
	c := s.dialRealtime(t, s.mintBeta(t, s.jwt(user, "acme")), true)
	c.until("session.created", nil)
	c.send(betaSessionUpdate(nil))
	c.until("session.updated", nil)

	var received, heardDone float64
	turn := func(text string) {
		evs, got := textTurn(t, c, text)
		if got == 0 {
			t.Fatal("the reply carried no audio")
		}
		received += got
		h, _ := responseUsage(evs[len(evs)-1])
		heardDone += h
	}
	turn("Before the store goes away.")

	link.cut()
	s.readyBecomes(t, http.StatusServiceUnavailable, "meter_store_unavailable")
	// The conversation goes on while the store is away: text turns and a spoken one.
	turn("While the store is away, the first turn.")
	speech := sileroSpeech(t, "samples.pcm")
	c.appendAudio(speech)
	c.send(map[string]any{"type": "input_audio_buffer.commit"})
	c.until("conversation.item.created", nil)
	c.send(map[string]any{"type": "response.create"})
	evs := c.until("response.done", nil)
	received += float64(len(replyAudio(t, evs))) / 24000
	h, _ := responseUsage(evs[len(evs)-1])
	heardDone += h
	turn(longText(3))
	if !s.logs.has("meter write failed") {
		t.Errorf("no meter write failed while the store was away")
	}

	link.restore()
	s.readyBecomes(t, http.StatusOK, "")
	heard, spoken := s.usageWhen(t, user, func(heard, spoken float64) bool {
		return math.Abs(spoken-received) < 1e-3 && heard >= heardDone-1e-3
	})
	t.Logf("served: %.3f s of reply received, %.3f s heard per response.done; usage after the store came back: heard %.3f spoken %.3f",
		received, heardDone, heard, spoken)
	if math.Abs(spoken-received) >= 1e-3 {
		t.Errorf("spoken seconds after the store came back: %.3f, want %.3f (the reply audio received)", spoken, received)
	}
	if heardDone <= 1 || heard < heardDone-1e-3 || heard > float64(len(speech))/24000+1e-3 {
		t.Errorf("heard seconds after the store came back: %.3f, want ≥ %.3f (response.done) and ≤ %.3f (sent)",
			heard, heardDone, float64(len(speech))/24000)
	}
	c.close()
	s.stop()
}

// TestFaultsRedisAway: the Redis ticket store goes away. Minting (POST /v1/realtime/client_secrets)
// and redeeming an ek_ ticket fail closed by name (503 ticket_store_unavailable); a conversation
// already running goes on; when Redis is back both work again.
func TestFaultsRedisAway(t *testing.T) {
	checkLeaks(t)
	needFlag(t, "ticket-store")
	rd := startPrivateRedis(t)
	link := startStoreLink(t, strings.TrimPrefix(strings.TrimSuffix(rd.url(), "/0"), "redis://"))
	s := startRealtime(t, serverOpts{Args: []string{"--ticket-store", "redis://" + link.addr() + "/0"}})
	jwt := s.jwt("redis-away-"+randHex(4), "acme")
	running := s.dialRealtime(t, s.mintGA(t, jwt), false)
	running.until("session.created", nil)
	spare := s.mintGA(t, jwt) // minted before the store goes away, redeemed while it is away

	link.cut()
	s.readyBecomes(t, http.StatusServiceUnavailable, "ticket_store_unavailable")
	code, body := s.post(t, "/v1/realtime/client_secrets", jwt, `{"session":{"type":"realtime","model":"gpt-realtime"}}`)
	if code != http.StatusServiceUnavailable || !strings.Contains(string(body), `"ticket_store_unavailable"`) {
		t.Errorf("mint with the ticket store away: %d %s, want 503 ticket_store_unavailable", code, body)
	}
	_, resp, err := websocket.Dial(ctxT(t, 30*time.Second), s.WSBase+"/v1/realtime?model=gpt-realtime", &websocket.DialOptions{
		HTTPClient: s.Client, HTTPHeader: http.Header{"Authorization": {"Bearer " + spare}}})
	if err == nil || resp == nil {
		t.Fatalf("redeeming a ticket with its store away: %v, want a refusal", err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), `"ticket_store_unavailable"`) {
		t.Errorf("redeem with the ticket store away: %d %s, want 503 ticket_store_unavailable", resp.StatusCode, b)
	}
	// The conversation admitted before goes on.
	if _, got := textTurn(t, running, "Still here while Redis is away?"); got == 0 {
		t.Error("the running conversation's reply carried no audio while Redis was away")
	}

	link.restore()
	s.readyBecomes(t, http.StatusOK, "")
	// The ticket minted before the outage is still one use: redeemed now.
	c := s.dialRealtime(t, spare, false)
	c.until("session.created", nil)
	c.close()
	s.waitBusyAtMost(t, 1, 15*time.Second) // org acme's cap is 2 and running holds one
	c2 := s.dialRealtime(t, s.mintGA(t, jwt), false)
	c2.until("session.created", nil)
	c2.close()
	running.close()
	s.stop()
}

// TestFaultsPostgresAwayQuota: with --quota-seconds-per-day, the Postgres meter store goes away.
// A principal whose balance the meter read minutes ago still starts conversations (counted from
// that balance plus what the meter holds); one it never read is refused by name, 503
// meter_store_unavailable, not quota_exceeded; once the store is back both are admitted.
func TestFaultsPostgresAwayQuota(t *testing.T) {
	checkLeaks(t)
	needFlag(t, "quota-seconds-per-day")
	dsn := os.Getenv("VOICED_TEST_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("VOICED_TEST_POSTGRES_DSN is unset: PostgreSQL (Debian package postgresql, scripts/install-deps.sh --test) started by scripts/test-services.sh")
	}
	var link *storeLink
	proxied := viaLink(t, dsn, func(target string) *storeLink { link = startStoreLink(t, target); return link })
	s := startRealtime(t, serverOpts{Args: []string{"--meter-dsn", proxied, "--quota-seconds-per-day", "3600"}})
	s.readyBecomes(t, http.StatusOK, "")
	known, stranger := "quota-known-"+randHex(4), "quota-stranger-"+randHex(4)
	converse := func(user string) {
		t.Helper()
		c := s.dialRealtime(t, s.jwt(user, "acme"), false)
		c.until("session.created", nil)
		c.close()
		// Its slot comes back once the close reaches the server and its closed usage record is
		// written or given up (retried for up to 5 s while the store is away): org acme's cap is
		// 2, so the next dial is not refused 429 for a slot this one still holds.
		s.waitSlotFree(t, 15*time.Second)
	}
	converse(known) // its admission reads its balance

	link.cut()
	s.readyBecomes(t, http.StatusServiceUnavailable, "meter_store_unavailable")
	converse(known)
	status, name := s.dialRefusal(t, s.jwt(stranger, "acme"))
	t.Logf("while the store is away: %s admitted; %s refused %d %s", known, stranger, status, name)
	if status != http.StatusServiceUnavailable || name != "meter_store_unavailable" {
		t.Errorf("a principal never read, while the store is away: %d %q, want 503 meter_store_unavailable", status, name)
	}

	link.restore()
	s.readyBecomes(t, http.StatusOK, "")
	// Every slot is back (converse waits for it), so the stranger is admitted at once: its
	// balance is read from the store again.
	converse(stranger)
	converse(known)
	s.stop()
}
