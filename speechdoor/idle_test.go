package speechdoor

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// The idle timer, on a fake clock: it fires one idle period after the last poke, never while
// busy, again after onIdle declines, and not at all once stopped.
func TestIdleWatch(t *testing.T) {
	tests := map[string]struct {
		pokes   []time.Duration // when the socket is active
		busyTil time.Duration   // busy until then
		decline int             // onIdle declines this many times first
		want    time.Duration   // when onIdle closes the socket
	}{
		"silent from the start":      {want: 10 * time.Second},
		"a poke restarts the period": {pokes: []time.Duration{4 * time.Second, 9 * time.Second}, want: 19 * time.Second},
		"busy is not idle":           {busyTil: 25 * time.Second, want: 30 * time.Second},
		"onIdle may decline":         {decline: 1, want: 20 * time.Second},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				w := newIdleWatch(10*time.Second, func() bool { return time.Since(start) < tc.busyTil })
				var closedAt atomic.Int64
				declined := 0
				done := make(chan struct{})
				go func() {
					defer close(done)
					w.run(context.Background(), nil, func() bool {
						if declined < tc.decline {
							declined++
							return false
						}
						closedAt.Store(int64(time.Since(start)))
						return true
					})
				}()
				for _, at := range tc.pokes {
					time.Sleep(at - time.Since(start))
					w.poke()
				}
				<-done
				if got := time.Duration(closedAt.Load()); got != tc.want {
					t.Errorf("closed at %v, want %v", got, tc.want)
				}
			})
		})
	}
}

func TestIdleWatchStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newIdleWatch(10*time.Second, nil)
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			w.run(context.Background(), stop, func() bool { t.Error("onIdle after stop"); return true })
		}()
		time.Sleep(5 * time.Second)
		close(stop)
		<-done
		time.Sleep(time.Minute)
	})
}
