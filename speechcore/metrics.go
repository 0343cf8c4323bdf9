package speechcore

import (
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/voiced/voiced/speechcore/whisper"
)

// Series names and help texts shared with the conversation (package session): both register
// voiced_sessions_open and voiced_sessions_refused_total, told apart by the constant label kind.
const (
	MetricSessionsOpen        = "voiced_sessions_open"
	MetricSessionsOpenHelp    = "Sessions open now, by kind (speech, conversation) and door."
	MetricSessionsRefused     = "voiced_sessions_refused_total"
	MetricSessionsRefusedHelp = "Sessions refused before they opened, by kind and reason (cap, tenant_cap, not_warm, not_mounted, quota, auth, origin, shutting_down)."
)

// Refusal reasons, the label values of voiced_sessions_refused_total.
const (
	ReasonCap          = "cap"
	ReasonTenantCap    = "tenant_cap"
	ReasonNotWarm      = "not_warm"
	ReasonNotMounted   = "not_mounted"
	ReasonQuota        = "quota"
	ReasonAuth         = "auth"
	ReasonOrigin       = "origin"
	ReasonShuttingDown = "shutting_down"
)

// LatencyBuckets (seconds) suit a stage measured against the 300 ms bar: 5 ms to 10 s.
var LatencyBuckets = []float64{.005, .01, .025, .05, .1, .2, .3, .5, .75, 1, 1.5, 2, 3, 5, 10}

// ReasonFor names a pre-upgrade refusal for voiced_sessions_refused_total, "" for one that is
// not counted (a bad request).
func ReasonFor(err error) string {
	var r *Refusal
	if !errors.As(err, &r) {
		return ""
	}
	switch r.Name {
	case ErrSessionCap.Name:
		return ReasonCap
	case ErrNotWarm.Name:
		return ReasonNotWarm
	case ErrNotMounted.Name:
		return ReasonNotMounted
	case ErrShuttingDown.Name:
		return ReasonShuttingDown
	case ErrOriginNotAllowed.Name:
		return ReasonOrigin
	}
	return ""
}

// metrics are the speech doors' series; Service.Collectors hands them to the registry.
type metrics struct {
	open    *prometheus.GaugeVec   // door
	refused *prometheus.CounterVec // reason
	queue   []prometheus.Collector // gauge funcs on the engines' queues

	firstToken    prometheus.Histogram     // /v1/transcribe firstTokenMs
	firstFrame    *prometheus.HistogramVec // door: /v1/synthesize firstFrameMs, /v1/speak/stream
	whisperDecode prometheus.Histogram     // one transcription's decode (owner pick-up → last token)
	whisperModel  prometheus.Histogram     // of which inside ONNX Runtime (encoder + decoder runs)
	whisperEncode prometheus.Histogram     // of which the encoder pass
	kokoroPass    prometheus.Histogram     // one piece: G2P, permit wait and the forward pass

	once sync.Once
}

func newMetrics(s *Service) *metrics {
	hist := func(name, help string) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: LatencyBuckets})
	}
	m := &metrics{
		open: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricSessionsOpen, Help: MetricSessionsOpenHelp,
			ConstLabels: prometheus.Labels{"kind": "speech"}}, []string{"door"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricSessionsRefused, Help: MetricSessionsRefusedHelp,
			ConstLabels: prometheus.Labels{"kind": "speech"}}, []string{"reason"}),
		firstToken: hist("voiced_transcribe_first_token_seconds",
			"WS /v1/transcribe: first audio byte to the first delta (firstTokenMs)."),
		firstFrame: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "voiced_synthesize_first_frame_seconds",
			Help:    "Text in to its first audio frame queued: /v1/synthesize firstFrameMs (door synthesize), a /v1/speak/stream piece (door speak).",
			Buckets: LatencyBuckets}, []string{"door"}),
		whisperDecode: hist("voiced_whisper_decode_seconds",
			"One Whisper transcription (≤ 30 s window): the owner picking it up to its last token (mel, encoder, decoder loop)."),
		whisperModel: hist("voiced_whisper_model_seconds",
			"Of voiced_whisper_decode_seconds, the time inside ONNX Runtime (encoder and decoder passes)."),
		whisperEncode: hist("voiced_whisper_encode_seconds",
			"Of voiced_whisper_model_seconds, the encoder pass over the 30 s window."),
		kokoroPass: hist("voiced_kokoro_pass_seconds",
			"One Kokoro piece: G2P, the wait for the model permit and the forward pass."),
	}
	m.queue = []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "voiced_whisper_queue_depth",
			Help: "Whisper transcriptions waiting plus the one running."},
			func() float64 {
				if s.Whisper == nil {
					return 0
				}
				return float64(s.Whisper.Stats().QueueDepth)
			}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "voiced_kokoro_permit_waiters",
			Help: "Kokoro callers waiting for the model permit."},
			func() float64 {
				if s.Kokoro == nil {
					return 0
				}
				return float64(s.Kokoro.QueueDepth())
			}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "voiced_transcripts_open",
			Help: "Half-duplex transcripts (/v1/audio/transcript) open now."},
			func() float64 {
				if s.transcripts == nil {
					return 0
				}
				return float64(s.transcripts.openCount())
			}),
	}
	return m
}

// Collectors returns the speech doors' series for a Prometheus registry (never the default one).
func (s *Service) Collectors() []prometheus.Collector {
	m := s.metrics
	return append([]prometheus.Collector{m.open, m.refused, m.firstToken, m.firstFrame,
		m.whisperDecode, m.whisperModel, m.whisperEncode, m.kokoroPass}, m.queue...)
}

// ObserveTranscription records one Whisper result's pass durations (the doors and the
// conversation's ears call it).
func (s *Service) ObserveTranscription(r whisper.Result) {
	s.metrics.whisperDecode.Observe(r.Decode.Seconds())
	s.metrics.whisperModel.Observe(r.InModel.Seconds())
	s.metrics.whisperEncode.Observe(r.Encode.Seconds())
}

// ObserveSynthesis records one Kokoro piece's duration, from the call to its audio.
func (s *Service) ObserveSynthesis(d time.Duration) { s.metrics.kokoroPass.Observe(d.Seconds()) }

// refuse counts a refusal by reason (when it has one) and answers it.
func (s *Service) refuse(w http.ResponseWriter, err error) {
	s.countRefusal(err)
	WriteError(w, err)
}

func (s *Service) countRefusal(err error) {
	if reason := ReasonFor(err); reason != "" {
		s.metrics.refused.WithLabelValues(reason).Inc()
	}
}

// opened counts a session open at door until the returned func is called.
func (s *Service) opened(door string) (closed func()) {
	g := s.metrics.open.WithLabelValues(door)
	g.Inc()
	return g.Dec
}
