package door

import (
	"fmt"
	"io"
	"net/http"
	"time"
)

// Listener limits: how long a client may take over each part of a request before the server
// hangs up. Without them a connection that trickles its headers, its body or nothing at all
// holds a goroutine, its buffers and what its handler has read so far, for ever.
const (
	// DefaultHeaderTimeout bounds the request line and headers (http.Server.ReadHeaderTimeout): a
	// browser or SDK sends them in one packet.
	DefaultHeaderTimeout = 10 * time.Second
	// DefaultIdleTimeout closes a keep-alive connection that sends no next request
	// (http.Server.IdleTimeout). Above the 60 s idle timeout of common load balancers (AWS ALB),
	// so the balancer, not the server, closes a pooled connection first; nginx's default is 75 s.
	DefaultIdleTimeout = 75 * time.Second
	// DefaultBodyGrace is how long any request body may take before the minimum rate counts: it
	// covers a client's slow start (TCP slow start, a phone waking its radio).
	DefaultBodyGrace = 10 * time.Second
	// DefaultBodyMinRate is the average rate, in bytes per second after the grace, a request body
	// must keep up: 32 KiB/s (256 kbit/s, a poor 3G uplink) moves the largest upload (64 MiB,
	// /v1/audio/transcriptions) in about 34 minutes, and ends a body trickled a byte at a time
	// within the grace plus what it sent divided by the rate (1 MiB: 42 s).
	DefaultBodyMinRate = 32 << 10
	// MaxHeaderBytes bounds the request line and headers (http.Server.MaxHeaderBytes; Go's default
	// is 1 MiB). The largest a client needs is a few KiB: a JWT in Authorization, a subprotocol
	// list, a browser's cookies (4 KiB each). 64 KiB is 16 times that.
	MaxHeaderBytes = 64 << 10
)

// Limits is the listener's configuration; the zero value of a field is its default.
type Limits struct {
	HeaderTimeout time.Duration // DefaultHeaderTimeout
	IdleTimeout   time.Duration // DefaultIdleTimeout
	BodyGrace     time.Duration // DefaultBodyGrace
	BodyMinRate   int           // bytes per second; DefaultBodyMinRate
}

// Validate refuses negative limits.
func (l Limits) Validate() error {
	if l.HeaderTimeout < 0 || l.IdleTimeout < 0 || l.BodyGrace < 0 || l.BodyMinRate < 0 {
		return fmt.Errorf("listener limits must not be negative (header timeout %v, idle timeout %v, body grace %v, body min rate %d B/s)",
			l.HeaderTimeout, l.IdleTimeout, l.BodyGrace, l.BodyMinRate)
	}
	return nil
}

// withDefaults is l with each zero field set to its default.
func (l Limits) withDefaults() Limits {
	if l.HeaderTimeout <= 0 {
		l.HeaderTimeout = DefaultHeaderTimeout
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = DefaultIdleTimeout
	}
	if l.BodyGrace <= 0 {
		l.BodyGrace = DefaultBodyGrace
	}
	if l.BodyMinRate <= 0 {
		l.BodyMinRate = DefaultBodyMinRate
	}
	return l
}

// Apply sets srv's header and idle timeouts and header size, and wraps its handler with the body
// pace (PaceBodies). It sets no ReadTimeout or WriteTimeout: those stay on a hijacked connection
// and would cut a WebSocket, and a streamed answer, at a fixed age.
func (l Limits) Apply(srv *http.Server) {
	l = l.withDefaults()
	srv.ReadHeaderTimeout = l.HeaderTimeout
	srv.IdleTimeout = l.IdleTimeout
	srv.MaxHeaderBytes = MaxHeaderBytes
	h := srv.Handler
	if h == nil {
		h = http.DefaultServeMux // what a nil Handler means to http.Server
	}
	srv.Handler = l.PaceBodies(h)
}

// PaceBodies gives every request that carries a body a read deadline that moves with what has
// arrived: the next byte is due by start + BodyGrace + received/BodyMinRate. A body sent at the
// minimum rate or faster is never cut, however large; one that stalls or trickles is, and its
// handler's read fails (the connection closes). A request without a body (a WebSocket handshake)
// gets no deadline, so a socket is not cut either. The first deadline (start + BodyGrace) is set
// before h runs, so a body its handler never reads is bounded too while the server discards it.
func (l Limits) PaceBodies(h http.Handler) http.Handler {
	l = l.withDefaults()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			h.ServeHTTP(w, r)
			return
		}
		p := &pacedBody{body: r.Body, rc: http.NewResponseController(w), start: time.Now(),
			grace: l.BodyGrace, rate: int64(l.BodyMinRate)}
		p.rc.SetReadDeadline(p.due()) // best effort: a writer that cannot (a test recorder) is unpaced
		r.Body = p
		h.ServeHTTP(w, r)
	})
}

// pacedBody is a request body whose reads move the connection's read deadline. Its reader (the
// handler, or the one goroutine it hands the body to) owns it.
type pacedBody struct {
	body     io.ReadCloser
	rc       *http.ResponseController
	start    time.Time
	grace    time.Duration
	rate     int64 // bytes per second
	received int64
}

// due is when the next byte must have arrived.
func (p *pacedBody) due() time.Time {
	return p.start.Add(p.grace + time.Duration(float64(p.received)/float64(p.rate)*float64(time.Second)))
}

func (p *pacedBody) Read(b []byte) (int, error) {
	p.rc.SetReadDeadline(p.due())
	n, err := p.body.Read(b)
	p.received += int64(n)
	return n, err
}

func (p *pacedBody) Close() error { return p.body.Close() }
