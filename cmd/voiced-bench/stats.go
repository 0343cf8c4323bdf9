package main

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"time"
)

// Summary is a distribution of one measurement. Percentiles are nearest-rank: P(p) is the
// smallest sample with at least p% of the samples at or below it, so every reported figure is a
// value that was actually measured (no interpolation between two runs).
type Summary struct {
	N    int     `json:"n"`
	Min  float64 `json:"min"`
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// Summarize describes xs (not modified). NaN samples are refused: a NaN would sort anywhere and
// make every percentile a lie.
func Summarize(xs []float64) (Summary, error) {
	if len(xs) == 0 {
		return Summary{}, nil
	}
	s := slices.Clone(xs)
	var sum float64
	for _, x := range s {
		if math.IsNaN(x) {
			return Summary{}, fmt.Errorf("a NaN sample among %d", len(s))
		}
		sum += x
	}
	slices.Sort(s)
	return Summary{
		N: len(s), Min: s[0], Max: s[len(s)-1], Mean: sum / float64(len(s)),
		P50: rank(s, 50), P95: rank(s, 95), P99: rank(s, 99),
	}, nil
}

// Percentile is the nearest-rank p-th percentile (0 < p ≤ 100) of sorted xs.
func Percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	return rank(sorted, p)
}

func rank(sorted []float64, p float64) float64 {
	// The rank is computed in integer hundredths so that 95% of 20 is exactly 19, not 19.000000000000004.
	n := len(sorted)
	k := (int64(math.Round(p*100))*int64(n) + 9999) / 10000 // ceil(p/100 · n)
	k = max(1, min(k, int64(n)))
	return sorted[k-1]
}

// Series collects samples of one measurement from many goroutines.
type Series struct {
	Name string
	Unit string
	Note string

	mu sync.Mutex
	xs []float64
}

func (s *Series) Add(x float64) {
	s.mu.Lock()
	s.xs = append(s.xs, x)
	s.mu.Unlock()
}

// AddDuration adds d in milliseconds.
func (s *Series) AddDuration(d time.Duration) { s.Add(ms(d)) }

func (s *Series) N() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.xs)
}

func (s *Series) Samples() []float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.xs)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
