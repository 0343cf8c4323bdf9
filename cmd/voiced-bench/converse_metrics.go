package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The server's Prometheus series as the bench reads them (GET /metrics).

// histogram is one Prometheus histogram series' sum and count, and its cumulative buckets.
type histogram struct {
	sum, count float64
	buckets    []bucket
}

// bucket is a histogram's cumulative count of observations ≤ le.
type bucket struct{ le, cum float64 }

// quantileBound is the upper bound of the bucket holding quantile q of the observations between
// before and h (the same series read twice): "q of them took at most this"; +Inf past the last.
func (h histogram) quantileBound(before histogram, q float64) float64 {
	n := h.count - before.count
	if n <= 0 {
		return 0
	}
	for i, b := range h.buckets {
		prev := 0.0
		if i < len(before.buckets) {
			prev = before.buckets[i].cum
		}
		if b.cum-prev >= q*n {
			return b.le
		}
	}
	return math.Inf(1)
}

// histograms reads every histogram series on GET /metrics (text format), keyed by name{labels}.
func (b *converseBench) histograms(ctx context.Context) (map[string]histogram, error) {
	text, err := b.metricsText(ctx)
	if err != nil {
		return nil, err
	}
	return parseHistograms(strings.NewReader(text))
}

// gauges reads the named unlabelled series (gauges, counters, untyped) from GET /metrics.
func (b *converseBench) gauges(ctx context.Context, names ...string) (map[string]float64, error) {
	text, err := b.metricsText(ctx)
	if err != nil {
		return nil, err
	}
	return gaugeValues(strings.NewReader(text), names...)
}

// gaugeValues is the value of each named unlabelled series in r (Prometheus text format).
func gaugeValues(r io.Reader, names ...string) (map[string]float64, error) {
	fams, err := parseMetrics(r)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, n := range names {
		for _, m := range fams[n].GetMetric() {
			if len(m.GetLabel()) > 0 {
				continue
			}
			switch {
			case m.Gauge != nil:
				out[n] = m.GetGauge().GetValue()
			case m.Counter != nil:
				out[n] = m.GetCounter().GetValue()
			case m.Untyped != nil:
				out[n] = m.GetUntyped().GetValue()
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

// parseMetrics reads the Prometheus text format, by family name.
func parseMetrics(r io.Reader) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parse /metrics: %w", err)
	}
	return fams, nil
}

// parseHistograms is every histogram series' sum and count, keyed by name{labels} (the labels
// as the exposition writes them).
func parseHistograms(r io.Reader) (map[string]histogram, error) {
	fams, err := parseMetrics(r)
	if err != nil {
		return nil, err
	}
	out := map[string]histogram{}
	for name, f := range fams {
		if f.GetType() != dto.MetricType_HISTOGRAM {
			continue
		}
		for _, m := range f.GetMetric() {
			h := m.GetHistogram()
			hist := histogram{sum: h.GetSampleSum(), count: float64(h.GetSampleCount())}
			for _, b := range h.GetBucket() {
				hist.buckets = append(hist.buckets, bucket{le: b.GetUpperBound(), cum: float64(b.GetCumulativeCount())})
			}
			out[name+labelText(m.GetLabel())] = hist
		}
	}
	return out, nil
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// labelText is {a="x",b="y"}, or "" for none.
func labelText(labels []*dto.LabelPair) string {
	if len(labels) == 0 {
		return ""
	}
	parts := make([]string, len(labels))
	for i, l := range labels {
		parts[i] = l.GetName() + `="` + labelEscaper.Replace(l.GetValue()) + `"`
	}
	return "{" + strings.Join(parts, ",") + "}"
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
