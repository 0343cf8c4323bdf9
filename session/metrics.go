package session

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/mind"
)

// metrics are the conversations' series; Server.Collectors hands them to the registry. They
// share voiced_sessions_open and voiced_sessions_refused_total with the speech doors (kind
// "conversation" here, "speech" there). No series is labelled by principal.
type metrics struct {
	open    *prometheus.GaugeVec   // door: voice, realtime
	refused *prometheus.CounterVec // reason

	turnWait    prometheus.Histogram // end of speech → speech_stopped
	finalDecode prometheus.Histogram // commit → the item's transcript
	mindFirst   prometheus.Histogram // the mind asked → its first delta
	answer      prometheus.Histogram // end of speech → the reply's first audio delta

	speculations *prometheus.CounterVec // outcome: started, used, discarded (speculate.go)
}

func newMetrics() *metrics {
	hist := func(name, help string) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: door.LatencyBuckets})
	}
	kind := prometheus.Labels{"kind": "conversation"}
	return &metrics{
		open: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: door.MetricSessionsOpen,
			Help: door.MetricSessionsOpenHelp, ConstLabels: kind}, []string{"door"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: door.MetricSessionsRefused,
			Help: door.MetricSessionsRefusedHelp, ConstLabels: kind}, []string{"reason"}),
		turnWait: hist("voiced_conversation_turn_wait_seconds",
			"server_vad/semantic_vad: the end of the user's speech to speech_stopped, in audio time (the silence waited out plus the detector's hangover)."),
		finalDecode: hist("voiced_conversation_final_decode_seconds",
			"A committed user audio item to its transcript (queue wait plus Whisper)."),
		mindFirst: hist("voiced_conversation_mind_first_token_seconds",
			"A reply asking the mind to its first delta (after the user's transcripts are in)."),
		answer: hist("voiced_conversation_first_audio_seconds",
			"The end of the user's speech (turn detected) to the reply's first audio delta queued: turn wait + transcript + mind + first synthesis."),
		speculations: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "voiced_conversation_speculative_mind_calls_total",
			Help: "Mind calls started on a partial transcript before the turn ended (semantic_vad, --speculate), by outcome: started; used (the final transcript matched: the reply streamed it); discarded (it did not, the speaker went on, or the turn was reset)."},
			[]string{"outcome"}),
	}
}

// Collectors returns the conversations' series for a Prometheus registry (never the default one).
func (s *Server) Collectors() []prometheus.Collector {
	m := s.metrics
	return []prometheus.Collector{m.open, m.refused, m.turnWait, m.finalDecode, m.mindFirst, m.answer, m.speculations}
}

// refuse counts a handshake refusal under its reason (door.Refusal.Reason) and answers it.
func (s *Server) refuse(w http.ResponseWriter, err error) {
	if reason := door.ReasonFor(err); reason != "" {
		s.metrics.refused.WithLabelValues(reason).Inc()
	}
	writeRefusal(w, err)
}

// timed wraps the mind so that each answer's first delta observes voiced_conversation_mind_first_token_seconds.
func (e Engines) timed(m *metrics) Engines {
	if e.Mind != nil {
		e.Mind = timedMind{Mind: e.Mind, first: m.mindFirst}
	}
	return e
}

type timedMind struct {
	mind.Mind
	first prometheus.Histogram
}

func (t timedMind) Answer(ctx context.Context, req mind.Request, emit func(mind.Delta) error) (mind.Reply, error) {
	asked, seen := time.Now(), false
	return t.Mind.Answer(ctx, req, func(d mind.Delta) error {
		if !seen {
			seen = true
			t.first.Observe(time.Since(asked).Seconds())
		}
		return emit(d)
	})
}
