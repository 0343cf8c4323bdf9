package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"
)

// What the bench reads of the server under test: its resident memory (/proc, /v1/speech/health)
// and its Prometheus series (GET /metrics).

// idleMemory opens k conversations that say nothing and reads the server's resident bytes
// (and, from /metrics, its goroutines and Go heap in use) before and after.
func (b *converseBench) idleMemory(ctx context.Context, r *Report, k, pid int) error {
	gaugeNames := []string{"go_goroutines", "go_memstats_heap_inuse_bytes"}
	before, err := b.rssSettled(ctx, pid)
	if err != nil {
		return err
	}
	gBefore, gErr := b.gauges(ctx, gaugeNames...)
	var conns []*websocket.Conn
	defer func() {
		for _, c := range conns {
			c.Close(websocket.StatusNormalClosure, "")
		}
	}()
	for i := range k {
		conn, err := b.open(ctx)
		if err != nil {
			if i == 0 {
				return err
			}
			r.Notes = append(r.Notes, fmt.Sprintf("idle: only %d conversations opened (%v)", i, err))
			break
		}
		conns = append(conns, conn)
		if err := b.configure(ctx, conn); err != nil {
			return err
		}
	}
	after, err := b.rssSettled(ctx, pid)
	if err != nil {
		return err
	}
	src := "/v1/speech/health processResidentBytes"
	if pid > 0 {
		src = fmt.Sprintf("/proc/%d/status VmRSS", pid)
	}
	n := float64(len(conns))
	r.Values["idle conversations open"] = n
	r.Values["idle: server resident MiB before"] = float64(before) / (1 << 20)
	r.Values["idle: server resident MiB with them"] = float64(after) / (1 << 20)
	if n > 0 {
		r.Values["idle: resident KiB per conversation"] = float64(after-before) / n / 1024
		if gAfter, err := b.gauges(ctx, gaugeNames...); gErr == nil && err == nil {
			if a, ok := gAfter["go_goroutines"]; ok {
				r.Values["idle: goroutines per conversation"] = (a - gBefore["go_goroutines"]) / n
			}
			if a, ok := gAfter["go_memstats_heap_inuse_bytes"]; ok {
				r.Values["idle: Go heap in use KiB per conversation"] = (a - gBefore["go_memstats_heap_inuse_bytes"]) / n / 1024
			}
		}
	}
	r.Notes = append(r.Notes, "idle: resident bytes from "+src+", median of 5 reads 200 ms apart, measured first (before any turn); Go keeps freed heap mapped, so the RSS delta is noisy at this size — the heap and goroutine deltas come from /metrics")
	return nil
}

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

// histogram is one Prometheus histogram series' sum and count.
type histogram struct{ sum, count float64 }

// histograms reads every histogram series on GET /metrics (text format), keyed by name{labels}.
func (b *converseBench) histograms(ctx context.Context) (map[string]histogram, error) {
	text, err := b.metricsText(ctx)
	if err != nil {
		return nil, err
	}
	return parseHistograms(strings.NewReader(text))
}

// gauges reads the named unlabelled series from GET /metrics.
func (b *converseBench) gauges(ctx context.Context, names ...string) (map[string]float64, error) {
	text, err := b.metricsText(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, line := range strings.Split(text, "\n") {
		for _, n := range names {
			if v, ok := strings.CutPrefix(line, n+" "); ok {
				if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
					out[n] = f
				}
			}
		}
	}
	return out, nil
}

func (b *converseBench) metricsText(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.c.http("/metrics"), nil)
	if err != nil {
		return "", err
	}
	req.Header = b.c.authHeader()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", errors.New(resp.Status)
	}
	b2, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	return string(b2), err
}

func parseHistograms(r io.Reader) (map[string]histogram, error) {
	hist := map[string]bool{}
	out := map[string]histogram{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" && f[3] == "histogram" {
			hist[f[2]] = true
			continue
		}
		if line == "" || line[0] == '#' {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		if sp < 0 {
			continue
		}
		series, val := line[:sp], line[sp+1:]
		name, labels, _ := strings.Cut(series, "{")
		if labels != "" {
			labels = "{" + labels
		}
		var field string
		switch {
		case strings.HasSuffix(name, "_sum") && hist[strings.TrimSuffix(name, "_sum")]:
			name, field = strings.TrimSuffix(name, "_sum"), "sum"
		case strings.HasSuffix(name, "_count") && hist[strings.TrimSuffix(name, "_count")]:
			name, field = strings.TrimSuffix(name, "_count"), "count"
		default:
			continue
		}
		v, err := strconv.ParseFloat(val, 64)
		if err != nil {
			return nil, fmt.Errorf("metrics line %q: %w", line, err)
		}
		h := out[name+labels]
		if field == "sum" {
			h.sum = v
		} else {
			h.count = v
		}
		out[name+labels] = h
	}
	return out, sc.Err()
}

// histDiff reports each histogram's mean over the phase (Δsum/Δcount).
func histDiff(r *Report, before, after map[string]histogram) {
	n := 0
	for k, a := range after {
		b := before[k]
		if dc := a.count - b.count; dc > 0 {
			mean := (a.sum - b.sum) / dc
			unit := ""
			if strings.Contains(k, "_seconds") {
				mean, unit = mean*1000, " ms"
			}
			r.Values[fmt.Sprintf("server /metrics %s mean%s (n=%.0f)", k, unit, dc)] = mean
			n++
		}
	}
	if n == 0 {
		r.Notes = append(r.Notes, "GET /metrics has no histogram that moved during the latency turns: the stage split above is from event arrival times only")
	}
}
