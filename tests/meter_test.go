package tests

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// usageOf reads GET /v1/usage for one principal: seconds heard and spoken in total.
func (s *server) usageOf(t testing.TB, principal string) (heard, spoken float64) {
	t.Helper()
	code, body := s.do("GET", "/v1/usage?principal="+principal, "", nil)
	if code != http.StatusOK {
		t.Fatalf("GET /v1/usage: %d %s", code, body)
	}
	var r struct {
		Principals []struct {
			Principal     string  `json:"principal"`
			HeardSeconds  float64 `json:"heardSeconds"`
			SpokenSeconds float64 `json:"spokenSeconds"`
		} `json:"principals"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("GET /v1/usage: %v: %s", err, body)
	}
	for _, p := range r.Principals {
		if p.Principal == principal {
			heard += p.HeardSeconds
			spoken += p.SpokenSeconds
		}
	}
	return heard, spoken
}

// usageWhen polls GET /v1/usage until ok holds for the principal's seconds (a turn's counts are
// written when the turn ends, not necessarily before its response.done reaches the client) or
// 10 s pass; it returns the last reading.
func (s *server) usageWhen(t testing.TB, principal string, ok func(heard, spoken float64) bool) (heard, spoken float64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		heard, spoken = s.usageOf(t, principal)
		if ok(heard, spoken) || time.Now().After(deadline) {
			return heard, spoken
		}
		time.Sleep(50 * time.Millisecond) // polling a durable store, not synchronising
	}
}

// responseUsage is the heard/spoken seconds voiced puts in response.done's usage.
func responseUsage(ev rtEvent) (heard, spoken float64) {
	h, _ := ev.get("response", "usage", "heard_seconds").(float64)
	s, _ := ev.get("response", "usage", "spoken_seconds").(float64)
	return h, s
}

// textTurn sends a text item and response.create and returns the turn's events (through
// response.done) and the reply audio's seconds as received.
func textTurn(t testing.TB, c *rtConn, text string) ([]rtEvent, float64) {
	t.Helper()
	c.send(textItem(text))
	c.send(map[string]any{"type": "response.create"})
	evs := c.until("response.done", nil)
	return evs, float64(len(replyAudio(t, evs))) / 24000
}

func longText(sentences int) string {
	var b strings.Builder
	for i := 1; i <= sentences; i++ {
		fmt.Fprintf(&b, "This is sentence number %d of a very long answer that keeps on going. ", i)
	}
	return b.String()
}

// TestMeterSurvivesKill9: a metered conversation (a reply heard back, then real speech streaming in
// at the speaker's pace) is cut by kill -9; after a restart on the same --data-dir the usage API
// shows all of it but at most one second: spoken ≥ the reply audio the client received − 1 s,
// heard ≥ what the server itself reports hearing for the same speech − 1 s.
func TestMeterSurvivesKill9(t *testing.T) {
	checkLeaks(t)
	s := startRealtime(t, serverOpts{})
	dataDir := s.DataDir
	speech := sileroSpeech(t, "samples.pcm")
	user := "crash-" + randHex(4)
	c := s.dialRealtime(t, s.mintBeta(t, s.jwt(user, "acme")), true)
	c.until("session.created", nil)
	c.send(betaSessionUpdate(nil))
	c.until("session.updated", nil)

	_, received := textTurn(t, c, "Please count my seconds.")
	if received == 0 {
		t.Fatal("the reply carried no audio")
	}
	// The client plays the reply before the user speaks (echo cancellation on, the WebSocket
	// default: the server takes the reply as playing in real time from when it was sent; speech
	// streamed while it would still be playing is gated as its echo when quieter than it).
	time.Sleep(time.Duration(received*float64(time.Second)) + 500*time.Millisecond)
	// The speaker talks at real time (100 ms per 100 ms: pacing, not synchronisation) and the
	// process dies mid-utterance, before any turn end could flush it.
	for i := 0; i < len(speech); i += 2400 {
		c.appendAudio(speech[i:min(i+2400, len(speech))])
		time.Sleep(100 * time.Millisecond)
	}
	s.kill9()
	c.close()

	s2 := startRealtime(t, serverOpts{DataDir: dataDir})
	heard, spoken := s2.usageOf(t, user)

	// What the server hears of this speech, measured on the restarted server (another principal).
	ref := s2.dialRealtime(t, s2.mintBeta(t, s2.jwt("ref-"+randHex(4), "")), true)
	ref.until("session.created", nil)
	ref.send(betaSessionUpdate(nil))
	ref.until("session.updated", nil)
	ref.appendAudio(speech)
	ref.send(map[string]any{"type": "input_audio_buffer.commit"})
	ref.until("conversation.item.created", nil)
	ref.send(map[string]any{"type": "response.create"})
	evs := ref.until("response.done", nil)
	refHeard, _ := responseUsage(evs[len(evs)-1])
	ref.close()

	t.Logf("before the kill: received %.2f s of reply, spoke %.2f s (the server hears %.2f s of it); after restart usage: heard %.2f spoken %.2f",
		received, float64(len(speech))/24000, refHeard, heard, spoken)
	if spoken < received-1 {
		t.Errorf("spoken seconds after kill -9: %.2f, want ≥ %.2f (received) − 1", spoken, received)
	}
	if refHeard <= 1 {
		t.Fatalf("the server reports hearing %.2f s of %0.2f s of real speech", refHeard, float64(len(speech))/24000)
	}
	if heard < refHeard-1 {
		t.Errorf("heard seconds after kill -9: %.2f, want ≥ %.2f − 1 (the speech streamed before the crash)", heard, refHeard)
	}
	if heard > float64(len(speech))/24000+0.1 {
		t.Errorf("heard %.2f s, more than the %.2f s spoken", heard, float64(len(speech))/24000)
	}
	// The conversation's own usage record (issue 20) survived too: open (the kill left no end),
	// with its seconds as of its last write (rewritten at most once a second).
	var page sessionPage
	if code := s2.getAs(t, "/v1/usage/sessions?principal="+user, s2.Token, &page); code != http.StatusOK || len(page.Sessions) != 1 {
		t.Fatalf("session records after kill -9: %d %+v", code, page)
	}
	rec := page.Sessions[0]
	t.Logf("session record after kill -9: %+v", rec)
	if rec.End != nil || rec.Heard < heard-1.1 || rec.Spoken < spoken-1.1 || rec.Heard > heard+1e-5 || rec.Spoken > spoken+1e-5 {
		t.Errorf("session record after kill -9: %+v, want open with heard ≈ %.2f, spoken ≈ %.2f (within the last second)", rec, heard, spoken)
	}
	s2.stop()
}

// TestMeterTwoNodes: two voiced processes sharing Redis (tickets) and Postgres (meter). A ticket
// minted on A is redeemed on B once and refused the second time; usage from both sums in one
// place, read from either.
func TestMeterTwoNodes(t *testing.T) {
	checkLeaks(t)
	redisURL, dsn := os.Getenv("VOICED_TEST_REDIS_URL"), os.Getenv("VOICED_TEST_POSTGRES_DSN")
	if redisURL == "" || dsn == "" {
		t.Skip("VOICED_TEST_REDIS_URL and VOICED_TEST_POSTGRES_DSN are not set (make test sets them via scripts/test-services.sh when the Debian packages redis-server and postgresql are installed: scripts/install-deps.sh --test)")
	}
	needFlag(t, "ticket-store", "meter-dsn")
	shared := serverOpts{Args: []string{"--ticket-store", redisURL, "--meter-dsn", dsn}}
	a := startRealtime(t, shared)
	b := startRealtime(t, shared)
	user := "two-nodes-" + randHex(4)

	ticket := a.mintBeta(t, a.jwt(user, "acme"))
	c := b.dialRealtime(t, ticket, true)
	c.until("session.created", nil)
	_, onB := textTurn(t, c, "Spoken on node B.")
	c.close()

	_, resp, err := websocket.Dial(ctxT(t, 10*time.Second), b.WSBase+"/v1/realtime?model=m", &websocket.DialOptions{
		HTTPClient: b.Client, HTTPHeader: http.Header{"Authorization": {"Bearer " + ticket}, "OpenAI-Beta": {"realtime=v1"}},
	})
	if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("second redemption of a ticket on B: err %v, HTTP %d; want 401", err, status)
	}
	_, resp, err = websocket.Dial(ctxT(t, 10*time.Second), a.WSBase+"/v1/realtime?model=m", &websocket.DialOptions{
		HTTPClient: a.Client, HTTPHeader: http.Header{"Authorization": {"Bearer " + ticket}, "OpenAI-Beta": {"realtime=v1"}},
	})
	if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("redemption of a used ticket on A (minted there): err %v; want 401", err)
	}

	ca := a.dialRealtime(t, a.mintBeta(t, a.jwt(user, "acme")), true)
	ca.until("session.created", nil)
	_, onA := textTurn(t, ca, "And this one on node A.")
	ca.close()

	want := onA + onB
	for name, s := range map[string]*server{"A": a, "B": b} {
		_, spoken := s.usageWhen(t, user, func(_, spoken float64) bool { return math.Abs(spoken-want) <= 0.05 })
		if math.Abs(spoken-want) > 0.05 {
			t.Errorf("usage read on %s: spoken %.3f s, want %.3f (A %.3f + B %.3f)", name, spoken, want, onA, onB)
		}
	}
	a.stop()
	b.stop()
}

// TestQuotaClosesSession: --quota-seconds-per-day 3 ends a conversation whose reply would run for
// minutes once the principal's 3 s are used (within a second), and a new conversation for that
// principal is refused.
func TestQuotaClosesSession(t *testing.T) {
	checkLeaks(t)
	needFlag(t, "quota-seconds-per-day")
	const quota = 3.0
	s := startRealtime(t, serverOpts{Args: []string{"--quota-seconds-per-day", fmt.Sprint(quota)}})
	user := "quota-" + randHex(4)
	c := s.dialRealtime(t, s.mintBeta(t, s.jwt(user, "")), true)
	c.until("session.created", nil)
	c.send(textItem(longText(40)))
	c.send(map[string]any{"type": "response.create"})

	// Read until the reply ends (response.done) or the server closes the socket.
	var evs []rtEvent
	closed := false
	for {
		ev, ok := c.next(60 * time.Second)
		if !ok {
			closed = true
			break
		}
		evs = append(evs, ev)
		if ev.Type == "error" {
			t.Logf("quota error event: %s", ev.Raw)
		}
		if ev.Type == "response.done" {
			break
		}
	}
	received := float64(len(replyAudio(t, evs))) / 24000
	t.Logf("received %.2f s of reply; socket closed by the server: %v; last events %v", received, closed, types(evs[max(0, len(evs)-6):]))
	if received > quota+1 {
		t.Errorf("a %.0f s quota let one reply run %.2f s: the quota must close the session within a second of it", quota, received)
	}
	if received < quota-1 {
		t.Errorf("the session stopped after %.2f s of a %.0f s quota: too early", received, quota)
	}
	_, spoken := s.usageOf(t, user)
	if spoken > quota+1 {
		t.Errorf("usage shows %.2f s spoken for a %.0f s quota", spoken, quota)
	}

	// The mint is refused by name, on every minting route: a ticket that cannot open a conversation
	// is not handed out (it used to be, and only the redemption was refused).
	for _, path := range []string{"/v1/voice/session", "/v1/realtime/sessions", "/v1/realtime/client_secrets"} {
		if st, name, _ := s.mintRaw(t, path, s.jwt(user, ""), `{}`); st != http.StatusTooManyRequests || name != "quota_exceeded" {
			t.Errorf("POST %s over quota: %d %q, want 429 quota_exceeded", path, st, name)
		}
	}
	code, body := s.post(t, "/v1/realtime/sessions", s.jwt(user, ""), `{}`)
	if code == http.StatusOK {
		var r struct {
			ClientSecret struct{ Value string } `json:"client_secret"`
		}
		json.Unmarshal(body, &r)
		_, resp, err := websocket.Dial(ctxT(t, 10*time.Second), s.WSBase+"/v1/realtime?model=m", &websocket.DialOptions{
			HTTPClient: s.Client, HTTPHeader: http.Header{"Authorization": {"Bearer " + r.ClientSecret.Value}, "OpenAI-Beta": {"realtime=v1"}},
		})
		if err == nil {
			t.Errorf("a conversation for a principal over its quota was opened")
		} else if resp != nil && resp.StatusCode < 400 {
			t.Errorf("over quota: HTTP %d", resp.StatusCode)
		}
	}
	s.stop()
}
