package speechcore

import "sync"

// Gate caps concurrent speech sessions. Doors take a slot before the upgrade and refuse with
// ErrSessionCap (429 + Retry-After) when none is free: a caller gets a status, not a socket that
// opens and fails.
type Gate struct {
	mu   sync.Mutex
	open int
	cap  int
}

// NewGate returns a gate admitting at most capacity sessions at once.
func NewGate(capacity int) *Gate { return &Gate{cap: capacity} }

// Acquire takes a slot; the returned release must be called exactly once when the session ends.
func (g *Gate) Acquire() (release func(), err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open >= g.cap {
		return nil, ErrSessionCap
	}
	g.open++
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			g.open--
			g.mu.Unlock()
		})
	}, nil
}

// Open reports the sessions open now; Cap the limit.
func (g *Gate) Open() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.open
}

// Cap reports the session limit.
func (g *Gate) Cap() int { return g.cap }
