package speechcore

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/speechcore/whisper"
)

// metrics are the engines' series; Service.Collectors hands them to the registry. The doors'
// own series (sessions open and refused, first token and frame) are speechdoor's.
type metrics struct {
	queue []prometheus.Collector // gauge funcs on the engines' queues

	whisperDecode prometheus.Histogram     // one transcription's decode (owner pick-up → last token)
	whisperModel  prometheus.Histogram     // of which inside ONNX Runtime (encoder + decoder runs)
	whisperEncode prometheus.Histogram     // of which the encoder pass
	whisperWait   *prometheus.HistogramVec // a transcription's queue wait, by kind (partial, final)
	kokoroPass    prometheus.Histogram     // one piece: G2P, permit wait and the forward pass
}

func newMetrics(s *Service) *metrics {
	hist := func(name, help string) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: door.LatencyBuckets})
	}
	m := &metrics{
		whisperDecode: hist("voiced_whisper_decode_seconds",
			"One Whisper transcription (≤ 30 s window): the owner picking it up to its last token (mel, encoder, decoder loop)."),
		whisperModel: hist("voiced_whisper_model_seconds",
			"Of voiced_whisper_decode_seconds, the time inside ONNX Runtime (encoder and decoder passes)."),
		whisperEncode: hist("voiced_whisper_encode_seconds",
			"Of voiced_whisper_model_seconds, the encoder pass over the 30 s window."),
		whisperWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "voiced_whisper_queue_wait_seconds",
			Help:    "One Whisper transcription's wait in the queue (submitted to the owner picking it up), by kind: final or partial.",
			Buckets: door.LatencyBuckets}, []string{"kind"}),
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
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "voiced_whisper_partials_dropped_total",
			Help: "Partial transcriptions answered without a full decode: replaced by their owner's newer partial or final while queued, or preempted mid-decode by a final.",
		}, func() float64 {
			if s.Whisper == nil {
				return 0
			}
			st := s.Whisper.Stats()
			return float64(st.PartialsSuperseded + st.PartialsStale + st.PartialsPreempted)
		}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "voiced_whisper_partials_preempted_total",
			Help: "Of voiced_whisper_partials_dropped_total, the partials a final ended mid-decode.",
		}, func() float64 {
			if s.Whisper == nil {
				return 0
			}
			return float64(s.Whisper.Stats().PartialsPreempted)
		}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "voiced_silero_runs_total",
			Help: "Silero VAD model runs: each scores a batch of 32 ms windows from every squelch and turn detector that had one ready.",
		}, func() float64 {
			runs, _ := s.sileroBatches()
			return float64(runs)
		}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "voiced_silero_windows_total",
			Help: "32 ms windows Silero VAD scored; over voiced_silero_runs_total, the mean batch.",
		}, func() float64 {
			_, windows := s.sileroBatches()
			return float64(windows)
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "voiced_kokoro_permit_waiters",
			Help: "Kokoro callers waiting for the model permit."},
			func() float64 {
				if s.Kokoro == nil {
					return 0
				}
				return float64(s.Kokoro.QueueDepth())
			}),
	}
	return m
}

// Collectors returns the engines' series for a Prometheus registry (never the default one).
func (s *Service) Collectors() []prometheus.Collector {
	m := s.metrics
	return append([]prometheus.Collector{m.whisperDecode, m.whisperModel, m.whisperEncode, m.whisperWait, m.kokoroPass}, m.queue...)
}

// ObserveTranscription records one Whisper result's pass durations (the doors and the
// conversation's ears call it).
func (s *Service) ObserveTranscription(r whisper.Result) {
	s.metrics.whisperDecode.Observe(r.Decode.Seconds())
	s.metrics.whisperModel.Observe(r.InModel.Seconds())
	s.metrics.whisperEncode.Observe(r.Encode.Seconds())
	s.metrics.whisperWait.WithLabelValues(r.Kind.String()).Observe(r.Wait.Seconds())
}

// ObserveSynthesis records one Kokoro piece's duration, from the call to its audio.
func (s *Service) ObserveSynthesis(d time.Duration) { s.metrics.kokoroPass.Observe(d.Seconds()) }

// sileroBatches is the shared Silero model's runs and the windows they scored (0, 0 without one).
func (s *Service) sileroBatches() (runs, windows int64) {
	if s.Silero == nil {
		return 0, 0
	}
	return s.Silero.BatchStats()
}
