package door

import (
	"context"
	"sync"
	"time"
)

// Sockets tracks hijacked connections (WebSockets), which http.Server.Shutdown neither sees nor
// waits for. A door calls Enter before it upgrades and the returned leave when its socket is
// closed; at shutdown Draining is closed first (finish the turn in flight, then close with
// StatusGoingAway), and when the grace period ends every socket's context is cancelled.
type Sockets struct {
	base   context.Context // cancelled when the grace period ends; owned by Shutdown
	cancel context.CancelFunc

	mu       sync.Mutex
	closing  bool
	draining chan struct{}
	open     int
	wg       sync.WaitGroup
}

// NewSockets returns an empty registry.
func NewSockets() *Sockets {
	base, cancel := context.WithCancel(context.Background())
	return &Sockets{base: base, cancel: cancel, draining: make(chan struct{})}
}

// Enter registers one socket. The returned context is parent's, also cancelled when the shutdown
// grace period ends; leave must be called exactly once when the socket is done (extra calls are
// ignored). After shutdown began Enter refuses with ErrShuttingDown.
func (s *Sockets) Enter(parent context.Context) (ctx context.Context, leave func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return nil, nil, ErrShuttingDown
	}
	s.open++
	s.wg.Add(1)
	ctx, cancel := context.WithCancel(parent)
	stop := context.AfterFunc(s.base, cancel)
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			stop()
			cancel()
			s.mu.Lock()
			s.open--
			s.mu.Unlock()
			s.wg.Done()
		})
	}, nil
}

// Draining is closed when shutdown begins: a socket should finish what it is doing and close.
func (s *Sockets) Draining() <-chan struct{} { return s.draining }

// Open reports the sockets registered now.
func (s *Sockets) Open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.open
}

// Shutdown refuses new sockets, tells open ones to drain, and waits for them until grace is done;
// then it cancels every socket's context and waits up to forceWait more for them to leave. It
// returns the number of sockets that had to be cancelled and how many never left.
func (s *Sockets) Shutdown(grace context.Context, forceWait time.Duration) (cancelled, stuck int) {
	s.mu.Lock()
	if !s.closing {
		s.closing = true
		close(s.draining)
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		s.cancel()
		return 0, 0
	case <-grace.Done():
	}
	cancelled = s.Open()
	s.cancel()
	t := time.NewTimer(forceWait)
	defer t.Stop()
	select {
	case <-done:
		return cancelled, 0
	case <-t.C:
		// The waiting goroutine ends when the stuck sockets finally leave.
		return cancelled, s.Open()
	}
}
