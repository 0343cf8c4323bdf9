package door

import "testing"

// A key's count survives its other sessions' releases (found by make mutate: forgetting the key
// while it still had sessions open let it past its cap), and a key is forgotten once its last
// session ends (the map does not grow with every key ever seen).
func TestGateKeyCountAcrossReleases(t *testing.T) {
	full := NewRefusal(429, "full", "").WithReason(ReasonCap)
	keyFull := NewRefusal(429, "key_full", "").WithReason(ReasonTenantCap)
	g := NewGate(10, full).PerKey(2, keyFull)
	a1, _ := g.Acquire("a")
	a2, _ := g.Acquire("a")
	a1() // a2 still open: key a counts 1
	a3, err := g.Acquire("a")
	if err != nil {
		t.Fatalf("key a with one session open: %v", err)
	}
	if _, err := g.Acquire("a"); err != keyFull {
		t.Fatalf("a third session for key a (a2, a3 open, cap 2): %v, want key_full", err)
	}
	a2()
	a3()
	for i := range 5 {
		rel, err := g.Acquire(string(rune('k' + i)))
		if err != nil {
			t.Fatal(err)
		}
		rel()
	}
	g.mu.Lock()
	keys := len(g.byKey)
	g.mu.Unlock()
	if keys != 0 || g.Open() != 0 {
		t.Fatalf("after every release: %d keys remembered, %d open; want 0 and 0", keys, g.Open())
	}
}
