package meter

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/voiced/voiced/internal/testkit"
)

// counting is an in-memory store that counts its writes (transactions).
type counting struct {
	mu     sync.Mutex
	writes int
	spoken map[string]float64
}

func (c *counting) Add(_ context.Context, recs []Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes++
	for _, r := range recs {
		c.spoken[r.Principal] += r.Spoken
	}
	return nil
}

func (c *counting) Usage(context.Context, Filter) ([]Row, error) { return nil, nil }
func (c *counting) Close() error                                 { return nil }

// TestSyncIsOneGroupCommit: conversations that each record a reply delta and wait for it to be
// durable (Add + Sync, as session's meterNow) share the meter's group commits: on the meter's
// clock (synctest's), at most one write per SyncEvery however many sync at once, and every
// caller's seconds are in the store when its Sync returns.
func TestSyncIsOneGroupCommit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const conversations, deltas = 8, 10
		const every = 10 * time.Millisecond
		store := &counting{spoken: map[string]float64{}}
		m := New(store, Config{FlushEvery: time.Hour, SyncEvery: every})
		ctx := context.Background()
		start := time.Now()
		var wg sync.WaitGroup
		for i := range conversations {
			p := string(rune('a' + i))
			wg.Go(func() {
				for d := 1; d <= deltas; d++ {
					m.Add(p, "", DoorConversation, 0, 0.2)
					if err := m.Sync(ctx); err != nil {
						t.Error(err)
						return
					}
					store.mu.Lock()
					got := store.spoken[p]
					store.mu.Unlock()
					if !near(got, 0.2*float64(d)) {
						t.Errorf("%s: Sync returned with %.1f s in the store, want %.1f", p, got, 0.2*float64(d))
					}
				}
			})
		}
		wg.Wait()
		elapsed := time.Since(start)
		store.mu.Lock()
		writes := store.writes
		store.mu.Unlock()
		t.Logf("%d conversations × %d deltas: %d writes in %s (meter clock)", conversations, deltas, writes, elapsed)
		if limit := int(elapsed/every) + 1; writes > limit {
			t.Errorf("%d writes in %s: more than one per SyncEvery (%d)", writes, elapsed, limit)
		}
		if writes > deltas+1 {
			t.Errorf("%d writes for %d rounds of %d conversations: the conversations' Syncs were not shared", writes, deltas, conversations)
		}
		if err := m.Close(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// TestSyncAfterCloseBegan: a Sync while Close waits for a holder joins the committer's write; a
// Sync after the committer stopped writes itself. Both return with their seconds durable.
func TestSyncAfterCloseBegan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &counting{spoken: map[string]float64{}}
		m := New(store, Config{FlushEvery: time.Hour, CloseWait: time.Minute})
		ctx := context.Background()
		release := m.Hold()
		closed := make(chan error, 1)
		go func() { closed <- m.Close(ctx) }()
		synctest.Wait() // Close waits for the holder
		m.Add("h", "", DoorConversation, 0, 1)
		if err := m.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		release()
		if err := <-closed; err != nil {
			t.Fatal(err)
		}
		if err := m.Sync(ctx); err != nil { // nothing pending: writes nothing, returns
			t.Fatal(err)
		}
		store.mu.Lock()
		defer store.mu.Unlock()
		if !near(store.spoken["h"], 1) {
			t.Fatalf("spoken %v, want 1", store.spoken["h"])
		}
	})
}

// TestSyncWaitEndsWithItsContext: a caller whose context ends while the commit it joined waits
// for SyncEvery is released with an error naming the store (ErrStoreDown), and the write still
// lands.
func TestSyncWaitEndsWithItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &counting{spoken: map[string]float64{}}
		m := New(store, Config{FlushEvery: time.Hour, SyncEvery: time.Second})
		m.Add("x", "", DoorConversation, 0, 1)
		if err := m.Sync(context.Background()); err != nil { // the first write: at once
			t.Fatal(err)
		}
		m.Add("x", "", DoorConversation, 0, 1)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if err := m.Sync(ctx); !errors.Is(err, ErrStoreDown) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Sync past its context = %v, want ErrStoreDown", err)
		}
		time.Sleep(time.Second) // the committer's next write
		synctest.Wait()
		store.mu.Lock()
		got := store.spoken["x"]
		store.mu.Unlock()
		if !near(got, 2) {
			t.Fatalf("spoken %v, want 2", got)
		}
		m.Close(context.Background())
	})
}

// TestBatchTableKeepsOneRowPerWriter: a meter's writes leave one row in usage_batches (its last
// batch number), not one per write (at a hundred writes a second, kept a week, that was tens of
// millions of rows); a retry of its last batch still adds nothing.
func TestBatchTableKeepsOneRowPerWriter(t *testing.T) {
	testkit.CheckLeaks(t) // the meter's loop and committer end with Close
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			sql := s.(*SQL)
			m := New(sql, Config{FlushEvery: time.Hour})
			ctx := context.Background()
			p := "rows-" + name + time.Now().Format("150405.000000")
			for range 5 {
				m.Add(p, "", DoorConversation, 1, 0)
				if err := m.Sync(ctx); err != nil {
					t.Fatal(err)
				}
			}
			var rows int
			var seq int64
			if err := sql.db.QueryRowContext(ctx, sql.rebind(`SELECT COUNT(*), MAX(seq) FROM usage_batches WHERE id = ?`), m.writer).Scan(&rows, &seq); err != nil {
				t.Fatal(err)
			}
			if rows != 1 || seq != 5 {
				t.Fatalf("usage_batches for this meter: %d rows, last seq %d; want 1 row, seq 5", rows, seq)
			}
			// The last batch again (a retry whose first answer was lost) adds nothing; the next adds.
			if err := sql.AddOnce(ctx, m.writer, 5, []Record{{Principal: p, Door: DoorConversation, At: time.Now(), Heard: 1}}); err != nil {
				t.Fatal(err)
			}
			if err := sql.AddOnce(ctx, m.writer, 6, []Record{{Principal: p, Door: DoorConversation, At: time.Now(), Heard: 0.5}}); err != nil {
				t.Fatal(err)
			}
			got, _ := sql.Usage(ctx, Filter{Principal: p})
			if len(got) != 1 || !near(got[0].Heard, 5.5) {
				t.Fatalf("rows %+v, want heard 5.5 (the retried batch once)", got)
			}
			m.Close(ctx)
		})
	}
}
