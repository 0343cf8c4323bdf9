package door

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// pipeListener hands out connections a test made with net.Pipe, so an http.Server runs in a
// synctest bubble: its deadlines are timers on the bubble's clock.
type pipeListener struct {
	conns  chan net.Conn
	closed chan struct{}
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}
func (l *pipeListener) Close() error   { close(l.closed); return nil }
func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

// dial opens a client connection to the server behind l.
func (l *pipeListener) dial() net.Conn {
	client, server := net.Pipe()
	l.conns <- server
	return client
}

// TestPaceBodies: a body that keeps up the minimum rate arrives whole however long it takes; one
// sent fast and then trickled, or stalled, is cut when it falls behind (grace + received/rate), and
// the connection closes; a request without a body (a WebSocket handshake) is not paced; an idle
// keep-alive connection is closed at the idle timeout.
func TestPaceBodies(t *testing.T) {
	const (
		grace = 10 * time.Second
		rate  = 64 << 10 // B/s
		size  = 1 << 20  // the body each client declares
	)
	type result struct {
		read int
		err  error
		at   time.Duration // since the request arrived
	}
	tests := []struct {
		name string
		send func(w io.Writer) // writes the body (Content-Length: size)
		full bool              // the body arrives whole
		at   time.Duration     // when the handler's read ends
	}{
		{"at the minimum rate", func(w io.Writer) {
			for range size / rate {
				w.Write(make([]byte, rate))
				time.Sleep(time.Second)
			}
		}, true, size/rate*time.Second - time.Second}, // 15 s (the last of 16 one-second chunks): past the grace
		{"half fast, then a byte every 10 s", func(w io.Writer) {
			w.Write(make([]byte, size/2))
			for range 100 {
				time.Sleep(10 * time.Second)
				if _, err := w.Write([]byte{0}); err != nil {
					return
				}
			}
		}, false, grace + size/2/rate*time.Second}, // 18 s
		{"nothing", func(w io.Writer) {}, false, grace},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				results := make(chan result, 1)
				h := Limits{BodyGrace: grace, BodyMinRate: rate, IdleTimeout: time.Minute}
				srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					start := time.Now()
					n, err := io.Copy(io.Discard, r.Body)
					results <- result{int(n), err, time.Since(start)}
				})}
				h.Apply(srv)
				ln := newPipeListener()
				go srv.Serve(ln)
				conn := ln.dial()
				go func() { // the client's reader: the server's answer, or its hang-up
					io.Copy(io.Discard, conn)
				}()
				fmt.Fprintf(conn, "POST /v1/voice/session HTTP/1.1\r\nHost: voiced\r\nContent-Length: %d\r\n\r\n", size)
				sent := make(chan struct{})
				go func() { defer close(sent); tc.send(conn) }()
				got := <-results
				if full := got.read == size && got.err == nil; full != tc.full {
					t.Errorf("read %d bytes, err %v; want the whole body: %v", got.read, got.err, tc.full)
				}
				// The trickle's bytes move the deadline by 1/rate each (15 µs): a millisecond is room.
				if got.at < tc.at || got.at > tc.at+time.Millisecond {
					t.Errorf("the read ended after %v, want %v", got.at, tc.at)
				}
				conn.Close()
				srv.Close()
				<-sent // the bubble ends only once every goroutine has
			})
		})
	}

	t.Run("no body, then idle", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, "ok")
			})}
			Limits{BodyGrace: grace, BodyMinRate: rate, IdleTimeout: time.Minute}.Apply(srv)
			ln := newPipeListener()
			go srv.Serve(ln)
			defer srv.Close()
			conn := ln.dial()
			defer conn.Close()
			// Requests without a body, the later ones long after the grace: nothing paces them (a
			// socket's handshake is the same), and the connection stays for the next request.
			br := bufio.NewReader(conn)
			for i := range 3 {
				if i > 0 {
					time.Sleep(50 * time.Second) // under the idle timeout
				}
				fmt.Fprintf(conn, "GET /health HTTP/1.1\r\nHost: voiced\r\n\r\n")
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatalf("request %d on a kept-alive connection: %v", i, err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			start := time.Now()
			if _, err := br.ReadByte(); err == nil || time.Since(start) != time.Minute {
				t.Errorf("idle connection: read %v after %v, want closed at the idle timeout (1m)", err, time.Since(start))
			}
		})
	})
}

// TestLimitsValidate: a negative limit is refused; zero means the default.
func TestLimitsValidate(t *testing.T) {
	if err := (Limits{BodyMinRate: -1}).Validate(); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Errorf("negative rate: %v", err)
	}
	var srv http.Server
	Limits{}.Apply(&srv)
	if srv.ReadHeaderTimeout != DefaultHeaderTimeout || srv.IdleTimeout != DefaultIdleTimeout || srv.MaxHeaderBytes != MaxHeaderBytes || srv.Handler == nil {
		t.Errorf("defaults: header %v idle %v max header %d", srv.ReadHeaderTimeout, srv.IdleTimeout, srv.MaxHeaderBytes)
	}
}
