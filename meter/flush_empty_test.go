package meter

import (
	"context"
	"testing"
	"time"
)

// TestFlushWritesNothingWhenNothingIsPending: a flush (each FlushEvery, each Sync) with no seconds
// pending writes nothing: an idle node does not open a store transaction (and number a batch)
// every tick. Found by make mutate: "len(pending) > 0" → ">= 0" passed every test.
func TestFlushWritesNothingWhenNothingIsPending(t *testing.T) {
	ctx := context.Background()
	store := &counting{spoken: map[string]float64{}}
	m := New(store, Config{FlushEvery: time.Hour})
	writes := func() int {
		store.mu.Lock()
		defer store.mu.Unlock()
		return store.writes
	}
	for range 3 {
		if err := m.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := writes(); n != 0 {
		t.Fatalf("3 flushes of an idle meter: %d store writes, want 0", n)
	}
	m.Add("alice", "", DoorConversation, 1, 2)
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if n := writes(); n != 1 {
		t.Fatalf("one Add, then Sync, Flush and Close: %d store writes, want 1", n)
	}
}
