package tests

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// openFDs counts the server's open file descriptors (/proc/PID/fd): one per connection it holds.
func (s *server) openFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", s.cmd.Process.Pid))
	if err != nil {
		t.Fatalf("server fds: %v", err)
	}
	return len(ents)
}

// holdConns opens n loopback connections to s, each running start (which writes a request and
// may keep trickling until stop closes), and reads each until the server hangs up. It returns a
// channel closed once every connection has been hung up, and stop.
func (s *server) holdConns(t testing.TB, n int, start func(c net.Conn, stop <-chan struct{})) (allClosed <-chan struct{}, alive func() int, stopAll func()) {
	t.Helper()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		open = n
	)
	stop := make(chan struct{})
	done := make(chan struct{})
	var conns []net.Conn
	var once sync.Once
	stopAll = func() {
		once.Do(func() { close(stop) })
	}
	t.Cleanup(func() { // closes what the server left open, so every reader ends
		stopAll()
		for _, c := range conns {
			c.Close()
		}
		wg.Wait()
	})
	for range n {
		c, err := net.DialTimeout("tcp", s.Addr, 10*time.Second)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		conns = append(conns, c)
		wg.Add(2)
		go func() { defer wg.Done(); start(c, stop) }()
		go func() { // the server's answer, if any, then its hang-up (EOF or reset)
			defer wg.Done()
			io.Copy(io.Discard, c)
			mu.Lock()
			open--
			mu.Unlock()
		}()
	}
	wg.Add(1)
	go func() { // closes done once every connection is hung up
		defer wg.Done()
		for {
			mu.Lock()
			left := open
			mu.Unlock()
			if left == 0 {
				close(done)
				return
			}
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return done, func() int { mu.Lock(); defer mu.Unlock(); return open }, stopAll
}

// TestFaultsSlowClients: connections that declare a 1 MiB body, send most of it and then trickle
// a byte a second (to a route that reads its body: POST /v1/voice/session with a principal JWT),
// that trickle their headers, or that sit idle after a keep-alive request, are closed by the
// server; three waves of slow bodies leave the server's descriptors where they were and its RSS
// within 128 MiB of what one wave took. Before the listener had body and idle deadlines, every one
// of them stayed open for as long as the client liked (issue 18, item 1).
func TestFaultsSlowClients(t *testing.T) {
	needFlag(t, "http-body-min-rate", "http-idle-timeout")
	s := startRealtime(t, serverOpts{Args: []string{"--http-body-grace", "2s", "--http-body-min-rate", "1048576",
		"--http-idle-timeout", "2s", "--http-header-timeout", "2s"}})
	const (
		conns     = 200
		bodySize  = 1 << 20
		sent      = bodySize - 1<<10 // most of the body, at once
		closeWait = 60 * time.Second // deadlines of ~3 s: a connection still open after this is held for ever
	)
	jwt := s.jwt("slow-body-"+randHex(4), "")
	baseFDs, baseRSS := s.openFDs(t), s.rssKiB(t)
	slowBody := func(c net.Conn, stop <-chan struct{}) {
		fmt.Fprintf(c, "POST /v1/voice/session HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n",
			s.Addr, jwt, bodySize)
		c.Write([]byte(`{"session":{"instructions":"` + strings.Repeat("a", sent-len(`{"session":{"instructions":"`))))
		for range 120 { // a byte a second, as long as the server takes it (bounded: two minutes)
			select {
			case <-stop:
				return
			case <-time.After(time.Second):
			}
			if _, err := c.Write([]byte("a")); err != nil {
				return
			}
		}
	}
	wait := func(what string, closed <-chan struct{}, alive func() int) {
		t.Helper()
		select {
		case <-closed:
		case <-time.After(closeWait):
			t.Fatalf("%s: %d of the connections are still open after %v (server RSS %d MiB, %d fds, %d at the start)",
				what, alive(), closeWait, s.rssKiB(t)>>10, s.openFDs(t), baseFDs)
		}
	}

	var waveRSS []int
	for wave := range 3 {
		closed, alive, _ := s.holdConns(t, conns, slowBody)
		wait(fmt.Sprintf("wave %d of %d slow bodies", wave+1, conns), closed, alive)
		waveRSS = append(waveRSS, s.rssKiB(t))
	}
	t.Logf("server RSS %d MiB at the start, %v MiB after each wave of %d slow 1 MiB bodies", baseRSS>>10,
		[]int{waveRSS[0] >> 10, waveRSS[1] >> 10, waveRSS[2] >> 10}, conns)
	if waveRSS[2] > waveRSS[0]+128<<10 {
		t.Errorf("server RSS grew from %d MiB after the first wave to %d MiB after the third: slow bodies' memory is kept", waveRSS[0]>>10, waveRSS[2]>>10)
	}

	// Headers trickled a byte a second: closed at the header timeout (this one was always set).
	closed, alive, _ := s.holdConns(t, 20, func(c net.Conn, stop <-chan struct{}) {
		for _, b := range []byte("POST /v1/voice/session HTTP/1.1\r\nHost: voiced\r\nX-Slow: " + strings.Repeat("a", 100)) {
			select {
			case <-stop:
				return
			case <-time.After(time.Second):
			}
			if _, err := c.Write([]byte{b}); err != nil {
				return
			}
		}
	})
	wait("slow headers", closed, alive)

	// A keep-alive connection that asks once and then sits idle.
	closed, alive, _ = s.holdConns(t, conns, func(c net.Conn, stop <-chan struct{}) {
		fmt.Fprintf(c, "GET /health/live HTTP/1.1\r\nHost: %s\r\n\r\n", s.Addr)
	})
	wait("idle keep-alives", closed, alive)

	if fds := s.openFDs(t); fds > baseFDs+10 {
		t.Errorf("the server holds %d descriptors after every slow client was closed, %d at the start", fds, baseFDs)
	}
	s.stop()
}

// TestListenerKeepsSockets: a realtime conversation that lasts longer than the body grace and the
// idle timeout, silent in between, still answers a turn: a WebSocket has no body to pace and,
// once upgraded, is no keep-alive connection.
func TestListenerKeepsSockets(t *testing.T) {
	needFlag(t, "http-body-min-rate", "http-idle-timeout")
	s := startRealtime(t, serverOpts{Args: []string{"--http-body-grace", "1s", "--http-body-min-rate", "1048576",
		"--http-idle-timeout", "1s", "--http-header-timeout", "1s"}})
	c := s.dialRealtime(t, s.jwt("long-socket-"+randHex(4), ""), false)
	c.until("session.created", nil)
	if errs, _, tr := turnAfter(t, c, "Hello."); len(errs) > 0 || tr == "" {
		t.Fatalf("first turn: errors %v, transcript %q", firstRaw(errs), tr)
	}
	time.Sleep(4 * time.Second) // silent past every listener deadline (1 s each)
	if errs, _, tr := turnAfter(t, c, "Hello again."); len(errs) > 0 || tr == "" {
		t.Fatalf("turn after 4 s of silence: errors %v, transcript %q", firstRaw(errs), tr)
	}
	// A body sent at loopback speed, longer than nothing, is read whole.
	req, _ := http.NewRequest("POST", s.Base+"/v1/voice/session",
		strings.NewReader(`{"session":{"instructions":"`+strings.Repeat("b", 120<<10)+`"}}`))
	req.Header.Set("Authorization", "Bearer "+s.jwt("long-socket-"+randHex(4), ""))
	resp, err := s.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"ticket"`) {
		t.Errorf("a 120 KiB session body (under the 128 KiB mint bound): %d %s", resp.StatusCode, b)
	}
	c.close()
	s.stop()
}
