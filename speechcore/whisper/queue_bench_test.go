package whisper

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkScheduleFinalWait: the queue wait of finals under the load of many conversations,
// each speaking turns with a partial every cadence and a final at its end, served by decoders
// owners whose "decode" takes a fixed time (a sleep that ends with its context, as the model's
// loop does between steps: this measures the scheduling, not the model). One iteration is one
// turn of every conversation, begun together (the bench ramp's conversations are in step too).
// Reported: final wait p50/p95 and the partials decoded per turn; preempt=off is the queue
// before a final could end a partial's decode.
func BenchmarkScheduleFinalWait(b *testing.B) {
	const (
		convs    = 16
		partials = 4 // per turn
		cadence  = 10 * time.Millisecond
		decode   = 3 * time.Millisecond
	)
	for _, decoders := range []int{1, 2} {
		for _, preempt := range []bool{false, true} {
			b.Run(fmt.Sprintf("decoders=%d/preempt=%v", decoders, preempt), func(b *testing.B) {
				s := newSchedule(DefaultQueueDepth, DefaultOwnerDepth, decoders)
				s.preempt = preempt
				quit := make(chan struct{})
				var owners sync.WaitGroup
				for range decoders {
					owners.Go(func() {
						s.work(quit, func(ctx context.Context, _ job) (Result, error) {
							select {
							case <-ctx.Done():
								return Result{}, ctx.Err()
							case <-time.After(decode):
								return Result{}, nil
							}
						})
					})
				}
				var mu sync.Mutex
				var waits []time.Duration
				decoded := 0
				submit := func(owner string, kind Kind) (Result, error) {
					j := job{ctx: context.Background(), reply: make(chan jobResult, 1), kind: kind, queued: time.Now()}
					if err := s.push(j.ctx, Request{Owner: owner, Kind: kind}, j, quit); err != nil {
						return Result{}, err
					}
					r := <-j.reply
					return r.res, r.err
				}
				b.ResetTimer()
				for range b.N {
					var turn sync.WaitGroup
					for c := range convs {
						turn.Go(func() {
							owner := fmt.Sprint("c", c)
							var pw sync.WaitGroup
							for range partials {
								time.Sleep(cadence)
								pw.Go(func() {
									if _, err := submit(owner, Partial); err == nil {
										mu.Lock()
										decoded++
										mu.Unlock()
									}
								})
							}
							r, err := submit(owner, Final)
							if err != nil {
								b.Error(err)
							}
							mu.Lock()
							waits = append(waits, r.Wait)
							mu.Unlock()
							pw.Wait()
						})
					}
					turn.Wait()
				}
				b.StopTimer()
				close(quit)
				owners.Wait()
				slices.Sort(waits)
				b.ReportMetric(float64(waits[len(waits)/2].Microseconds())/1000, "final-wait-p50-ms")
				b.ReportMetric(float64(waits[len(waits)*95/100].Microseconds())/1000, "final-wait-p95-ms")
				b.ReportMetric(float64(decoded)/float64(b.N*convs), "partials-decoded/turn")
			})
		}
	}
}
