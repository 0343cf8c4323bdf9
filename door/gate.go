package door

import "sync"

// Gate caps concurrent sessions: at most Cap in all and, when PerKey > 0, at most PerKey for one
// key (a tenant). Doors take a slot before the upgrade and refuse by name when none is free: a
// caller gets a status, not a socket that opens and fails.
type Gate struct {
	cap, perKey int
	full        *Refusal // at the total cap
	keyFull     *Refusal // at a key's cap

	mu    sync.Mutex
	open  int
	byKey map[string]int
}

// NewGate returns a gate admitting at most capacity sessions, refusing with full beyond it.
func NewGate(capacity int, full *Refusal) *Gate {
	return &Gate{cap: capacity, full: full, byKey: map[string]int{}}
}

// PerKey caps the sessions of one key at n (0: no cap), refusing with keyFull beyond it; call it
// before the gate is used.
func (g *Gate) PerKey(n int, keyFull *Refusal) *Gate {
	g.perKey, g.keyFull = n, keyFull
	return g
}

// Full reports whether the total cap is reached (checked before a credential is spent; Acquire
// checks again).
func (g *Gate) Full() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.open >= g.cap
}

// Acquire takes a slot for key ("" when the gate has no per-key cap); the returned release must be
// called when the session ends (further calls do nothing).
func (g *Gate) Acquire(key string) (release func(), err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open >= g.cap {
		return nil, g.full
	}
	if g.perKey > 0 && g.byKey[key] >= g.perKey {
		return nil, g.keyFull
	}
	g.open++
	g.byKey[key]++
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			g.open--
			if g.byKey[key]--; g.byKey[key] == 0 {
				delete(g.byKey, key)
			}
		})
	}, nil
}

// Open reports the sessions open now.
func (g *Gate) Open() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.open
}

// Cap reports the total cap.
func (g *Gate) Cap() int { return g.cap }
