package session

import (
	"net/http"
	"testing"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/voiced/voiced/internal/testkit"
)

// TestRefusalsAndOpenCounted: each pre-upgrade refusal is counted under its reason, and an open
// conversation shows in voiced_sessions_open by door; the series register on a fresh registry.
func TestRefusalsAndOpenCounted(t *testing.T) {
	testkit.CheckLeaks(t)
	ts := newTestServer(t, Config{MaxConversations: 4, MaxPerTenant: 1})
	prometheus.NewRegistry().MustRegister(ts.Collectors()...)
	refused := func(reason string) float64 { return value(ts.metrics.refused.WithLabelValues(reason)) }

	a := ts.open(t)
	if got := value(ts.metrics.open.WithLabelValues("voice")); got != 1 {
		t.Errorf("open{voice} = %v with one conversation, want 1", got)
	}
	tests := map[string]struct {
		path   string
		header http.Header
		status int
		name   string
	}{
		"origin":     {"/v1/voice?ticket=" + ts.ticket(t), http.Header{"Origin": {"https://evil.example"}}, 403, "origin_not_allowed"},
		"auth":       {"/v1/voice?ticket=ek_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", nil, 401, "ticket_invalid"},
		"tenant_cap": {"/v1/realtime?model=m", http.Header{"Authorization": {"Bearer " + ts.ticket(t)}}, 429, "too_many_conversations_for_tenant"},
	}
	for reason, tc := range tests {
		t.Run(reason, func(t *testing.T) {
			before := refused(reason)
			_, resp, err := ts.dial(t, tc.path, &websocket.DialOptions{HTTPHeader: tc.header})
			assertRefused(t, resp, err, tc.status, tc.name)
			if got := refused(reason) - before; got != 1 {
				t.Errorf("refused{%s} moved by %v, want 1", reason, got)
			}
		})
	}
	a.conn.Close(websocket.StatusNormalClosure, "")
}

// value reads one counter or gauge.
func value(m prometheus.Metric) float64 {
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		panic(err)
	}
	if d.Counter != nil {
		return d.Counter.GetValue()
	}
	return d.Gauge.GetValue()
}
