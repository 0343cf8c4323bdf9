package meter

import "github.com/prometheus/client_golang/prometheus"

// metrics are the meter's Prometheus series; Collectors hands them to the registry /metrics serves.
type metrics struct {
	heard, spoken *prometheus.CounterVec
	writeFailures prometheus.Counter
	lost          *prometheus.CounterVec
	pending       prometheus.GaugeFunc
}

func newMetrics(m *Meter) *metrics {
	return &metrics{
		heard: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "voiced_heard_seconds_total", Help: "Seconds of audio heard past the squelch, by door.",
		}, []string{"door"}),
		spoken: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "voiced_spoken_seconds_total", Help: "Seconds of audio spoken (sent), by door.",
		}, []string{"door"}),
		writeFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "voiced_meter_write_failures_total", Help: "Meter writes the store refused (counts kept and retried).",
		}),
		lost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "voiced_meter_lost_seconds_total",
			Help: "Seconds heard+spoken that will never be written, by door and reason (closed: added after the meter closed; pending_full: a new key past the in-memory bound while the store was away; store_down: still pending when the close gave up).",
		}, []string{"door", "reason"}),
		pending: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "voiced_meter_pending_keys", Help: "Principal/door/day counts waiting to be written.",
		}, func() float64 { return float64(m.Stats().PendingKeys) }),
	}
}

// Collectors returns the meter's series for a Prometheus registry.
func (m *Meter) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.metrics.heard, m.metrics.spoken, m.metrics.writeFailures, m.metrics.lost, m.metrics.pending}
}
