package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// The server's Prometheus series as the bench reads them (GET /metrics).

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
