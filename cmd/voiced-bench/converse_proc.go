package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// The server's resident memory: /proc/PID/status when the bench knows the pid, else
// /v1/speech/health.

// rssSettled is the median of five reads 200 ms apart.
func (b *converseBench) rssSettled(ctx context.Context, pid int) (int64, error) {
	var xs []float64
	for i := range 5 {
		if i > 0 {
			time.Sleep(200 * time.Millisecond)
		}
		v, err := b.rss(ctx, pid)
		if err != nil {
			return 0, err
		}
		xs = append(xs, float64(v))
	}
	sum, err := Summarize(xs)
	return int64(sum.P50), err
}

func (b *converseBench) rss(ctx context.Context, pid int) (int64, error) {
	if pid > 0 {
		f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			return 0, err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
				kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
				return kb * 1024, err
			}
		}
		return 0, errors.New("no VmRSS line")
	}
	var h struct {
		ProcessResidentBytes int64 `json:"processResidentBytes"`
	}
	if err := b.c.getJSON(ctx, "/v1/speech/health", &h); err != nil {
		return 0, err
	}
	return h.ProcessResidentBytes, nil
}
