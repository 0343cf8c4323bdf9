package testkit

import (
	"runtime"
	"testing"
	"time"
)

// Leaks is a goroutine-leak check; the zero value is the plain check (CheckLeaks).
type Leaks struct {
	// Wait is how long the check polls for goroutines (and Others) to end: what a closed socket
	// or call started ends just after the test's last read. 10 s when zero.
	Wait time.Duration
	// Settle, when set, runs once before the first count (the end-to-end tests close the
	// default client's idle connections, whose goroutines would otherwise stay).
	Settle func()
	// Others, when set, names what else the test left running besides goroutines (child
	// processes); "" when nothing.
	Others func() string
}

// CheckLeaks fails t if more goroutines run once t's cleanups have run than ran when it was
// called. Call it first in a test, so the cleanups registered after it (servers, calls) run
// before it counts. Not for parallel tests: the count is the process's.
func CheckLeaks(t testing.TB) {
	t.Helper()
	Leaks{}.Check(t)
}

// Check is CheckLeaks with l's wait and extra conditions.
func (l Leaks) Check(t testing.TB) {
	t.Helper()
	wait := l.Wait
	if wait == 0 {
		wait = 10 * time.Second
	}
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		if l.Settle != nil {
			l.Settle()
		}
		deadline := time.Now().Add(wait)
		for {
			n, others := runtime.NumGoroutine(), ""
			if l.Others != nil {
				others = l.Others()
			}
			if n <= before && others == "" {
				return
			}
			if time.Now().After(deadline) {
				if others != "" {
					t.Errorf("still running after the test: %s", others)
				}
				if n > before {
					buf := make([]byte, 1<<20)
					buf = buf[:runtime.Stack(buf, true)]
					t.Errorf("goroutines: %d before the test, %d after it:\n%s", before, n, buf)
				}
				return
			}
			time.Sleep(20 * time.Millisecond) // polling for exits to finish; not a synchronisation
		}
	})
}
