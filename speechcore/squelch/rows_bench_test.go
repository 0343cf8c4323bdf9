package squelch

import (
	"fmt"
	"os"
	goruntime "runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	ort "github.com/yalue/onnxruntime_go"
)

// BenchmarkRunRows is the cost of one ONNX Runtime Run of Silero at batch 1, 16 and 64: the
// fixed per-call cost against the per-row cost, on the graph with the batch fixed at 1 (what a
// Stream ran alone) and with it symbolic (what a batched Run needs). Rows are windows of real
// speech at different offsets, so each row's state differs.
func BenchmarkRunRows(b *testing.B) {
	needModel(b)
	raw, err := os.ReadFile(os.Getenv("VOICED_SILERO_MODEL"))
	if err != nil {
		b.Skip(err)
	}
	pcm := sileroTestfile(b, "samples2.pcm")
	for _, graph := range []struct {
		name string
		rows int64
	}{{"fixed1", 1}, {"symbolic", 0}} {
		onnx, err := specialiseRows(raw, graph.rows)
		if err != nil {
			b.Fatal(err)
		}
		opts, err := ort.NewSessionOptions()
		if err != nil {
			b.Fatal(err)
		}
		opts.SetIntraOpNumThreads(1)
		opts.SetInterOpNumThreads(1)
		sess, err := ort.NewDynamicAdvancedSessionWithONNXData(onnx, []string{"input", "state"}, []string{"output", "stateN"}, opts)
		opts.Destroy()
		if err != nil {
			b.Fatal(err)
		}
		for _, rows := range []int{1, 16, 64} {
			if graph.rows == 1 && rows != 1 {
				continue
			}
			b.Run(fmt.Sprintf("%s/rows=%d", graph.name, rows), func(b *testing.B) {
				in, _ := ort.NewEmptyTensor[float32](ort.NewShape(int64(rows), contextSamples+WindowSamples))
				st, _ := ort.NewEmptyTensor[float32](ort.NewShape(2, int64(rows), 128))
				stN, _ := ort.NewEmptyTensor[float32](ort.NewShape(2, int64(rows), 128))
				out, _ := ort.NewEmptyTensor[float32](ort.NewShape(int64(rows), 1))
				defer in.Destroy()
				defer st.Destroy()
				defer stN.Destroy()
				defer out.Destroy()
				goruntime.LockOSThread()
				defer goruntime.UnlockOSThread()
				cpu0 := threadCPU(b)
				b.ResetTimer()
				for i := range b.N {
					x := in.GetData()
					for r := range rows {
						at := ((i + r*37) * WindowSamples) % (len(pcm) - contextSamples - WindowSamples)
						copy(x[r*(contextSamples+WindowSamples):(r+1)*(contextSamples+WindowSamples)], pcm[at:])
					}
					if err := sess.Run([]ort.Value{in, st}, []ort.Value{out, stN}); err != nil {
						b.Fatal(err)
					}
					copy(st.GetData(), stN.GetData())
				}
				n := float64(b.N)
				b.ReportMetric(float64(b.Elapsed().Microseconds())/n, "us/run")
				b.ReportMetric(float64(b.Elapsed().Microseconds())/n/float64(rows), "us/window")
				b.ReportMetric(float64((threadCPU(b)-cpu0).Microseconds())/n/float64(rows), "cpu-us/window")
			})
		}
		sess.Destroy()
	}
}

// BenchmarkStreams is N streams (1, 16, 64) each fed 4 s of its own speech in 20 ms pushes, with
// batching on (the default) and off (SetMaxBatch(1)): the process's CPU per window (getrusage,
// so the goroutines' hand-offs and GC count), the mean windows per Run, and the wall time of the
// pushes that completed a window (p50/p99: what a conversation waits for its VAD). "paced" feeds
// at real time, each stream at its own phase (the server's shape); "flood" feeds as fast as it can.
// One iteration feeds everything once: run with -benchtime 1x.
func BenchmarkStreams(b *testing.B) {
	m, err := Load(testEnv, os.Getenv("VOICED_SILERO_MODEL"))
	if err != nil {
		b.Skip(err)
	}
	defer m.Close()
	const push = 320
	for _, paced := range []bool{true, false} {
		for _, n := range []int{1, 16, 64} {
			for _, batch := range []int{1, DefaultMaxBatch} {
				mode := map[bool]string{true: "paced", false: "flood"}[paced]
				b.Run(fmt.Sprintf("%s/streams=%d/maxbatch=%d", mode, n, batch), func(b *testing.B) {
					m.SetMaxBatch(batch)
					srcs := batchSources(b, n)
					var lat []time.Duration
					var mu sync.Mutex
					var windows int64
					runs0, win0 := m.BatchStats()
					cpu0 := processCPU(b)
					start := time.Now()
					for range b.N {
						var wg sync.WaitGroup
						t0 := time.Now()
						for i, pcm := range srcs {
							wg.Add(1)
							go func() {
								defer wg.Done()
								st, err := m.NewStream()
								if err != nil {
									b.Error(err)
									return
								}
								defer st.Close()
								var mine []time.Duration
								phase := time.Duration(i) * 20 * time.Millisecond / time.Duration(n)
								for k, at := 0, 0; at+push <= len(pcm); k, at = k+1, at+push {
									if paced {
										time.Sleep(time.Until(t0.Add(phase + time.Duration(k)*20*time.Millisecond)))
									}
									ran := false
									p0 := time.Now()
									if err := st.Feed(pcm[at:at+push], func(float32) { ran = true }); err != nil {
										b.Error(err)
										return
									}
									if ran {
										mine = append(mine, time.Since(p0))
									}
								}
								mu.Lock()
								lat = append(lat, mine...)
								windows += int64(len(mine))
								mu.Unlock()
							}()
						}
						wg.Wait()
					}
					wall := time.Since(start)
					cpu := processCPU(b) - cpu0
					runs, win := m.BatchStats()
					slices.Sort(lat)
					b.ReportMetric(float64(cpu.Microseconds())/float64(windows), "cpu-us/window")
					b.ReportMetric(float64(cpu)/float64(wall), "cores")
					b.ReportMetric(float64(win-win0)/float64(runs-runs0), "windows/run")
					b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-us")
					b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-us")
				})
			}
		}
	}
}

// processCPU is the whole process's user+system CPU time (RUSAGE_SELF).
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
