package speechdoor

import (
	"net/http"
	"testing"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// gathered reads a registry into name → metric families' samples (count for histograms, value otherwise),
// keyed by name and the label values.
func gathered(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			key := mf.GetName()
			for _, l := range m.GetLabel() {
				key += "," + l.GetName() + "=" + l.GetValue()
			}
			switch mf.GetType() {
			case dto.MetricType_HISTOGRAM:
				out[key] = float64(m.GetHistogram().GetSampleCount())
			case dto.MetricType_COUNTER:
				out[key] = m.GetCounter().GetValue()
			default:
				out[key] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

// TestSpeakingMetricsMove: a synthesis moves firstFrame and the Kokoro pass histogram; a socket
// refused for its Origin counts under reason origin; the series register on a fresh registry.
func TestSpeakingMetricsMove(t *testing.T) {
	s := newSpeakingServer(t, Config{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(s.svc.Collectors()...)
	reg.MustRegister(s.svc.speech.Collectors()...)

	c := dial(t, s.wsURL("/v1/synthesize"), nil)
	c.expect("ready")
	c.text("Hello world.")
	c.expect("audio")
	c.binary()
	c.expect("utteranceComplete")

	_, resp, err := websocket.Dial(t.Context(), s.wsURL("/v1/synthesize"), &websocket.DialOptions{
		HTTPHeader: http.Header{"Origin": {"https://evil.example"}}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("foreign origin: %v %v", resp, err)
	}

	got := gathered(t, reg)
	for _, key := range []string{
		"voiced_synthesize_first_frame_seconds,door=synthesize",
		"voiced_kokoro_pass_seconds",
		"voiced_sessions_refused_total,kind=speech,reason=origin",
		"voiced_sessions_open,door=synthesize,kind=speech", // the socket above is still open
	} {
		if got[key] < 1 {
			t.Errorf("%s = %v, want ≥ 1 (all: %v)", key, got[key], got)
		}
	}
}

// TestHearingMetricsMove: a transcription moves firstToken and the Whisper pass histograms.
func TestHearingMetricsMove(t *testing.T) {
	h := newHearingServer(t, Config{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(h.svc.Collectors()...)
	reg.MustRegister(h.svc.speech.Collectors()...)
	pcm, _ := codecSpeech(t, "həlˈO wˈɜɹld.")
	c := dialSTT(t, h.wsURL("/v1/transcribe"))
	c.until("ready", "")
	c.sendAudio(pcm)
	c.send(websocket.MessageText, []byte(`{"type":"end"}`))
	c.until("delta", "final")
	got := gathered(t, reg)
	for _, key := range []string{"voiced_transcribe_first_token_seconds", "voiced_whisper_decode_seconds", "voiced_whisper_model_seconds", "voiced_whisper_encode_seconds"} {
		if got[key] < 1 {
			t.Errorf("%s = %v, want ≥ 1 (all: %v)", key, got[key], got)
		}
	}
	if _, ok := got["voiced_whisper_queue_depth"]; !ok {
		t.Error("no voiced_whisper_queue_depth")
	}
}
