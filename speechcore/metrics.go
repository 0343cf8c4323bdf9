package speechcore

import (
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/speechcore/whisper"
)

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
		return prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: door.LatencyBuckets})
	}
	m := &metrics{
		open: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: door.MetricSessionsOpen, Help: door.MetricSessionsOpenHelp,
			ConstLabels: prometheus.Labels{"kind": "speech"}}, []string{"door"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: door.MetricSessionsRefused, Help: door.MetricSessionsRefusedHelp,
			ConstLabels: prometheus.Labels{"kind": "speech"}}, []string{"reason"}),
		firstToken: hist("voiced_transcribe_first_token_seconds",
			"WS /v1/transcribe: first audio byte to the first delta (firstTokenMs)."),
		firstFrame: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "voiced_synthesize_first_frame_seconds",
			Help:    "Text in to its first audio frame queued: /v1/synthesize firstFrameMs (door synthesize), a /v1/speak/stream piece (door speak).",
			Buckets: door.LatencyBuckets}, []string{"door"}),
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
	door.WriteError(w, err)
}

func (s *Service) countRefusal(err error) {
	if reason := door.ReasonFor(err); reason != "" {
		s.metrics.refused.WithLabelValues(reason).Inc()
	}
}

// opened counts a session open at door until the returned func is called.
func (s *Service) opened(door string) (closed func()) {
	g := s.metrics.open.WithLabelValues(door)
	g.Inc()
	return g.Dec
}
