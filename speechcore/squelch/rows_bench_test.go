package squelch

import (
	"fmt"
	"os"
	goruntime "runtime"
	"testing"

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
