package meter

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// Close waits for the last of several holders, not the first to let go, and returns as soon as
// the last lets go (not at the CloseWait bound); a holder's second release does not count for
// another (found by make mutate).
func TestCloseWaitsForEveryHolder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := New(openSQLite(t), Config{FlushEvery: time.Hour, CloseWait: 30 * time.Second})
		a, b := m.Hold(), m.Hold()
		start := time.Now() // synctest's clock: Close must end at the last release, not at CloseWait
		closed := make(chan error, 1)
		go func() { closed <- m.Close(context.Background()) }()
		synctest.Wait()
		a()
		a() // idempotent: b still holds
		synctest.Wait()
		select {
		case err := <-closed:
			t.Fatalf("Close returned (%v) while a second writer still held the meter", err)
		default:
		}
		b()
		if err := <-closed; err != nil {
			t.Fatalf("Close: %v", err)
		}
		if waited := time.Since(start); waited != 0 {
			t.Fatalf("Close took %v (the CloseWait bound), want it to end at the last release", waited)
		}
	})
}
