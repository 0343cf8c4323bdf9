package speechdoor

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/voiced/voiced/door"
)

// metrics are the speech doors' series; Doors.Collectors hands them to the registry. The
// engines' own series are speechcore's (Service.Collectors).
type metrics struct {
	open        *prometheus.GaugeVec     // door
	refused     *prometheus.CounterVec   // reason
	firstToken  prometheus.Histogram     // /v1/transcribe firstTokenMs
	firstFrame  *prometheus.HistogramVec // door: /v1/synthesize firstFrameMs, /v1/speak/stream
	transcripts prometheus.Collector     // gauge func on the open transcripts
}

func newMetrics(s *Doors) *metrics {
	return &metrics{
		open: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: door.MetricSessionsOpen, Help: door.MetricSessionsOpenHelp,
			ConstLabels: prometheus.Labels{"kind": "speech"}}, []string{"door"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: door.MetricSessionsRefused, Help: door.MetricSessionsRefusedHelp,
			ConstLabels: prometheus.Labels{"kind": "speech"}}, []string{"reason"}),
		firstToken: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "voiced_transcribe_first_token_seconds",
			Help:    "WS /v1/transcribe: first audio byte to the first delta (firstTokenMs).",
			Buckets: door.LatencyBuckets}),
		firstFrame: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "voiced_synthesize_first_frame_seconds",
			Help:    "Text in to its first audio frame queued: /v1/synthesize firstFrameMs (door synthesize), a /v1/speak/stream piece (door speak).",
			Buckets: door.LatencyBuckets}, []string{"door"}),
		transcripts: prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "voiced_transcripts_open",
			Help: "Half-duplex transcripts (/v1/audio/transcript) open now."},
			func() float64 {
				if s.transcripts == nil {
					return 0
				}
				return float64(s.transcripts.openCount())
			}),
	}
}

// Collectors returns the speech doors' series for a Prometheus registry (never the default one).
func (s *Doors) Collectors() []prometheus.Collector {
	m := s.metrics
	return []prometheus.Collector{m.open, m.refused, m.firstToken, m.firstFrame, m.transcripts}
}

// refuse counts a refusal by reason (when it has one) and answers it.
func (s *Doors) refuse(w http.ResponseWriter, err error) {
	s.countRefusal(err)
	door.WriteError(w, err)
}

func (s *Doors) countRefusal(err error) {
	if reason := door.ReasonFor(err); reason != "" {
		s.metrics.refused.WithLabelValues(reason).Inc()
	}
}

// opened counts a session open at door until the returned func is called.
func (s *Doors) opened(door string) (closed func()) {
	g := s.metrics.open.WithLabelValues(door)
	g.Inc()
	return g.Dec
}
