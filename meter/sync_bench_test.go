package meter

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"
)

// BenchmarkSyncPerDelta is the cost of the kill -9 bound: one Add and one Sync (a durable write,
// its own transaction) per 200 ms reply delta, as session's meterNow makes them. -cpu sets the
// conversations syncing at once (they share writes). Postgres runs when VOICED_TEST_POSTGRES_DSN
// is set. Reported: the latency of one Sync (ns/op), deltas/s, the store writes per delta (group
// commits shared) and the process's CPU per delta (getrusage: user+system, the store's included).
func BenchmarkSyncPerDelta(b *testing.B) {
	stores := map[string]func(b *testing.B) Store{
		"sqlite": func(b *testing.B) Store {
			s, err := OpenSQLite(context.Background(), b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s
		},
		"postgres": func(b *testing.B) Store {
			dsn := os.Getenv("VOICED_TEST_POSTGRES_DSN")
			if dsn == "" {
				b.Skip("VOICED_TEST_POSTGRES_DSN is unset")
			}
			s, err := OpenPostgres(context.Background(), dsn)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s
		},
	}
	for name, open := range stores {
		b.Run(name, func(b *testing.B) {
			m := New(open(b), Config{FlushEvery: time.Hour})
			ctx := context.Background()
			principal := "bench-sync-" + newBatchID()[:8]
			cpu0 := cpuTime()
			m.mu.Lock()
			landed0 := m.landed
			m.mu.Unlock()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					m.Add(principal, "", DoorConversation, 0, 0.2)
					if err := m.Sync(ctx); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deltas/s")
			m.mu.Lock()
			b.ReportMetric(float64(m.landed-landed0)/float64(b.N), "writes/delta")
			m.mu.Unlock()
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/delta")
			m.Close(ctx)
		})
	}
}

// cpuTime is the process's CPU time so far (user + system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
