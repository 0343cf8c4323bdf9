package main

import (
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestSummarize(t *testing.T) {
	t.Parallel()
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[i] = float64(100 - i) // 100..1, reversed: Summarize must sort
	}
	twenty := make([]float64, 20)
	for i := range twenty {
		twenty[i] = float64(i + 1)
	}
	tests := map[string]struct {
		in   []float64
		want Summary
	}{
		"empty":  {nil, Summary{}},
		"one":    {[]float64{7}, Summary{N: 1, Min: 7, P50: 7, P95: 7, P99: 7, Max: 7, Mean: 7}},
		"two":    {[]float64{10, 2}, Summary{N: 2, Min: 2, P50: 2, P95: 10, P99: 10, Max: 10, Mean: 6}},
		"1..100": {hundred, Summary{N: 100, Min: 1, P50: 50, P95: 95, P99: 99, Max: 100, Mean: 50.5}},
		// 95% of 20 is exactly rank 19: a float rounding up to rank 20 would report the maximum.
		"1..20": {twenty, Summary{N: 20, Min: 1, P50: 10, P95: 19, P99: 20, Max: 20, Mean: 10.5}},
		"outlier": {[]float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1000},
			Summary{N: 10, Min: 1, P50: 1, P95: 1000, P99: 1000, Max: 1000, Mean: 100.9}},
		"negative": {[]float64{-3, -1, -2}, Summary{N: 3, Min: -3, P50: -2, P95: -1, P99: -1, Max: -1, Mean: -2}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			in := slices.Clone(tc.in)
			got, err := Summarize(in)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(got.Mean-tc.want.Mean) > 1e-9 {
				t.Errorf("mean %v, want %v", got.Mean, tc.want.Mean)
			}
			got.Mean = tc.want.Mean
			if got != tc.want {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
			if !slices.Equal(in, tc.in) {
				t.Errorf("Summarize changed its input: %v", in)
			}
		})
	}
}

func TestSummarizeRefusesNaN(t *testing.T) {
	t.Parallel()
	if _, err := Summarize([]float64{1, math.NaN(), 3}); err == nil {
		t.Fatal("a NaN sample was summarized")
	}
}

// TestPercentileAgainstDefinition checks nearest rank on random data against its definition:
// the smallest sample with at least p% of the samples at or below it.
func TestPercentileAgainstDefinition(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		n := 1 + r.IntN(300)
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = math.Round(r.NormFloat64()*100) / 10 // ties happen
		}
		slices.Sort(xs)
		for _, p := range []float64{1, 25, 50, 90, 95, 99, 99.9, 100} {
			got := Percentile(xs, p)
			var want float64
			for _, x := range xs {
				below := 0
				for _, y := range xs {
					if y <= x {
						below++
					}
				}
				if float64(below)*100 >= p*float64(n)-1e-9 {
					want = x
					break
				}
			}
			if got != want {
				t.Fatalf("trial %d n=%d p=%v: got %v, want %v", trial, n, p, got, want)
			}
		}
	}
}

func TestSeriesConcurrent(t *testing.T) {
	t.Parallel()
	var s Series
	done := make(chan struct{})
	for g := range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 100 {
				s.Add(float64(g*100 + i))
			}
		}()
	}
	for range 8 {
		<-done
	}
	sum, err := Summarize(s.Samples())
	if err != nil {
		t.Fatal(err)
	}
	if sum.N != 800 || sum.Min != 0 || sum.Max != 799 || sum.P50 != 399 {
		t.Fatalf("got %+v", sum)
	}
}

func TestParseHistograms(t *testing.T) {
	t.Parallel()
	text := `# HELP voiced_turn_wait_seconds Turn wait.
# TYPE voiced_turn_wait_seconds histogram
voiced_turn_wait_seconds_bucket{le="0.5"} 1
voiced_turn_wait_seconds_bucket{le="+Inf"} 3
voiced_turn_wait_seconds_sum 1.5
voiced_turn_wait_seconds_count 3
# TYPE voiced_heard_seconds_total counter
voiced_heard_seconds_total{door="voice"} 12
# TYPE voiced_pass_seconds histogram
voiced_pass_seconds_sum{model="whisper"} 0.25
voiced_pass_seconds_count{model="whisper"} 5
`
	got, err := parseHistograms(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]histogram{
		"voiced_turn_wait_seconds":             {sum: 1.5, count: 3},
		`voiced_pass_seconds{model="whisper"}`: {sum: 0.25, count: 5},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for k, v := range want {
		if g := got[k]; g.sum != v.sum || g.count != v.count {
			t.Errorf("%s: got %+v, want %+v", k, got[k], v)
		}
	}
	r := newReport("x", nil)
	histDiff(r, map[string]histogram{"voiced_turn_wait_seconds": {sum: 0.5, count: 1}}, got)
	if v := r.Values["server /metrics voiced_turn_wait_seconds mean ms (n=2)"]; math.Abs(v-500) > 1e-9 {
		t.Errorf("turn wait mean %v ms, want 500 (values %v)", v, r.Values)
	}
}

func TestLoopbackOnly(t *testing.T) {
	t.Parallel()
	tests := map[string]bool{
		"http://127.0.0.1:8200":    true,
		"https://127.0.0.2:1":      true,
		"http://[::1]:8200":        true,
		"http://localhost:8200":    true,
		"http://10.0.0.1:8200":     false,
		"http://example.com":       false,
		"http://0.0.0.0:8200":      false,
		"ws://127.0.0.1:8200":      false,
		"http://127.0.0.1.nip.io/": false,
	}
	for raw, ok := range tests {
		t.Run(raw, func(t *testing.T) {
			_, err := loopbackURL(raw)
			if (err == nil) != ok {
				t.Fatalf("loopbackURL(%q) err = %v, want ok=%v", raw, err, ok)
			}
		})
	}
}

func TestGaugeValues(t *testing.T) {
	t.Parallel()
	text := `# TYPE go_goroutines gauge
go_goroutines 42
# TYPE process_open_fds gauge
process_open_fds 9
# TYPE voiced_whisper_queue_depth gauge
voiced_whisper_queue_depth{model="whisper"} 3
# TYPE voiced_heard_seconds_total counter
voiced_heard_seconds_total 12.5
`
	got, err := gaugeValues(strings.NewReader(text), "go_goroutines", "voiced_heard_seconds_total", "voiced_whisper_queue_depth", "absent")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"go_goroutines": 42, "voiced_heard_seconds_total": 12.5}
	if !maps.Equal(got, want) {
		t.Fatalf("got %v, want %v (labelled and absent series left out)", got, want)
	}
}

// TestQuantileBound: the bucket bound under which a quantile of the observations made between
// two reads fell.
func TestQuantileBound(t *testing.T) {
	before := histogram{count: 10, buckets: []bucket{{0.01, 10}, {0.1, 10}, {1, 10}, {math.Inf(1), 10}}}
	after := histogram{count: 30, buckets: []bucket{{0.01, 20}, {0.1, 28}, {1, 30}, {math.Inf(1), 30}}}
	if got := after.quantileBound(before, 0.5); got != 0.01 {
		t.Errorf("p50 bound %v, want 0.01 (10 of the 20 new ≤ 10 ms)", got)
	}
	if got := after.quantileBound(before, 0.95); got != 1 {
		t.Errorf("p95 bound %v, want 1 (18 of 20 ≤ 100 ms, 20 ≤ 1 s)", got)
	}
}
