package squelch

import (
	"errors"
	"fmt"
	"math"
	"os"
	goruntime "runtime"
	"sync"
	"testing"
	"time"
)

// batchSources is n different recordings: the two silero-vad-go recordings from different
// offsets, each mixed with a little noise of its own so no two streams carry the same samples.
func batchSources(t testing.TB, n int) [][]float32 {
	t.Helper()
	recs := [][]float32{sileroTestfile(t, "samples.pcm"), sileroTestfile(t, "samples2.pcm")}
	const seconds = 4
	out := make([][]float32, n)
	for i := range out {
		rec := recs[i%2]
		at := (i * 7919 * 13) % (len(rec) - seconds*SampleRate)
		noise := pinkNoise(seconds, -50, uint64(i+1))
		x := make([]float32, seconds*SampleRate)
		for k := range x {
			x[k] = rec[at+k] + noise[k]
		}
		out[i] = x
	}
	return out
}

// feedAll feeds pcm to a new stream on m in pushes of push samples and returns every window's
// probability.
func feedAll(t testing.TB, m *Model, pcm []float32, push int) ([]float32, error) {
	st, err := m.NewStream()
	if err != nil {
		return nil, err
	}
	defer st.Close()
	var probs []float32
	for at := 0; at < len(pcm); at += push {
		if err := st.Feed(pcm[at:min(at+push, len(pcm))], func(p float32) { probs = append(probs, p) }); err != nil {
			return probs, err
		}
	}
	return probs, nil
}

// Streams fed at once share Runs, and each stream's probabilities are the ones it gets alone.
// Bit for bit: ONNX Runtime's CPU kernels compute each row of Silero's graph the same way whatever
// the batch (measured: max |batched - alone| = 0 at 16 and 64 streams), so the test demands
// equality; should a future runtime differ by rounding, that is the line to revisit.
func TestBatchedSameProbabilities(t *testing.T) {
	needModel(t)
	m, err := Load(testEnv, os.Getenv("VOICED_SILERO_MODEL"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ n, cap int }{{16, DefaultMaxBatch}, {64, DefaultMaxBatch}, {16, 3}} {
		n := tc.n
		t.Run(fmt.Sprintf("%d streams, batches of %d", n, tc.cap), func(t *testing.T) {
			// A small cap makes full batches, led by a second leader while the first runs.
			m.SetMaxBatch(tc.cap)
			srcs := batchSources(t, n)
			runsBefore, windowsBefore := m.BatchStats()
			alone := make([][]float32, n)
			for i, pcm := range srcs { // one at a time: every window runs alone
				if alone[i], err = feedAll(t, m, pcm, 320); err != nil {
					t.Fatal(err)
				}
			}
			runs0, windows0 := m.BatchStats()
			if windows0-windowsBefore != runs0-runsBefore {
				t.Fatalf("one stream at a time made %d runs for %d windows", runs0-runsBefore, windows0-windowsBefore)
			}
			batched := make([][]float32, n)
			errs := make([]error, n)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i, pcm := range srcs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					batched[i], errs[i] = feedAll(t, m, pcm, 320)
				}()
			}
			close(start)
			wg.Wait()
			runs, windows := m.BatchStats()
			runs, windows = runs-runs0, windows-windows0
			t.Logf("%d streams: %d windows in %d runs (%.1f a run)", n, windows, runs, float64(windows)/float64(runs))
			if windows <= runs {
				t.Fatalf("no window was batched: %d windows in %d runs", windows, runs)
			}
			var worst float64
			for i := range srcs {
				if errs[i] != nil {
					t.Fatalf("stream %d: %v", i, errs[i])
				}
				if len(batched[i]) != len(alone[i]) {
					t.Fatalf("stream %d: %d windows batched, %d alone", i, len(batched[i]), len(alone[i]))
				}
				for k := range alone[i] {
					worst = max(worst, math.Abs(float64(batched[i][k]-alone[i][k])))
					if batched[i][k] != alone[i][k] {
						t.Fatalf("stream %d window %d: %v batched, %v alone", i, k, batched[i][k], alone[i][k])
					}
				}
			}
			t.Logf("max |batched - alone| = %g", worst)
		})
	}
	m.Close()
}

// Close while streams feed: the Runs in flight finish, later windows fail with ErrClosed, no
// stream hangs, and no goroutine is left behind (the batcher starts none).
func TestBatcherCloseWhileFeeding(t *testing.T) {
	needModel(t)
	before := goruntime.NumGoroutine()
	m, err := Load(testEnv, os.Getenv("VOICED_SILERO_MODEL"))
	if err != nil {
		t.Fatal(err)
	}
	srcs := batchSources(t, 16)
	var wg sync.WaitGroup
	errs := make(chan error, len(srcs))
	for _, pcm := range srcs {
		st, err := m.NewStream()
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for at := 0; ; at = (at + 320) % (len(pcm) - 320) {
				if err := st.Feed(pcm[at:at+320], func(float32) {}); err != nil {
					errs <- err
					return
				}
			}
		}()
		defer st.Close()
	}
	time.Sleep(200 * time.Millisecond)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("streams still feeding 10 s after Close")
	}
	close(errs)
	for err := range errs {
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("after Close: %v, want ErrClosed", err)
		}
	}
	if runs, windows := m.BatchStats(); windows <= runs {
		t.Fatalf("no window was batched: %d windows in %d runs", windows, runs)
	}
	deadline := time.Now().Add(5 * time.Second)
	for goruntime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := goruntime.NumGoroutine(); n > before {
		t.Fatalf("%d goroutines after Close, %d before", n, before)
	}
}

// SetMaxBatch(1) turns batching off: every window runs alone, even with streams waiting.
func TestBatcherCap(t *testing.T) {
	needModel(t)
	m, err := Load(testEnv, os.Getenv("VOICED_SILERO_MODEL"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, cap := range []int{1, 4} {
		m.SetMaxBatch(cap)
		m.batch.mu.Lock()
		m.batch.largest = 0
		m.batch.runners = 1 // one leader at a time: the queue outgrows the cap, which takes must keep
		m.batch.mu.Unlock()
		runs0, windows0 := m.BatchStats()
		var wg sync.WaitGroup
		for _, pcm := range batchSources(t, 16) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := feedAll(t, m, pcm[:SampleRate], 320); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		runs, windows := m.BatchStats()
		runs, windows = runs-runs0, windows-windows0
		m.batch.mu.Lock()
		largest := m.batch.largest
		m.batch.mu.Unlock()
		if largest > cap || windows < runs {
			t.Fatalf("cap %d: a Run of %d windows (%d windows in %d runs)", cap, largest, windows, runs)
		}
		if cap > 1 && windows == runs {
			t.Fatalf("cap %d: nothing batched (%d windows in %d runs)", cap, windows, runs)
		}
	}
}
