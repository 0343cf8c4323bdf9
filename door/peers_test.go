package door

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

type fakePeers struct {
	node      string
	forwarded string // the node the last request was forwarded to
}

func (p *fakePeers) NodeID() string { return p.node }

func (p *fakePeers) Forward(w http.ResponseWriter, r *http.Request, node string) {
	p.forwarded = node
	w.WriteHeader(http.StatusTeapot)
}

func TestForwarded(t *testing.T) {
	gone := NewRefusal(http.StatusNotFound, "thing_not_found", "no such thing")
	tests := map[string]struct {
		id        string
		again     bool // the request carries ForwardedHeader
		want      bool
		forwardTo string
		status    int
	}{
		"no node in the id":         {id: "tr_00ff", want: false},
		"this node's":               {id: "tr_node-a.00ff", want: false},
		"another node's":            {id: "tr_node-b.00ff", want: true, forwardTo: "node-b", status: http.StatusTeapot},
		"another prefix":            {id: "rtc_node-b.00ff", want: false},
		"forwarded once, not owner": {id: "tr_node-b.00ff", again: true, want: true, status: http.StatusNotFound},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := &fakePeers{node: "node-a"}
			r := httptest.NewRequest("GET", "/v1/audio/transcript/"+tc.id, nil)
			if tc.again {
				r.Header.Set(ForwardedHeader, "node-c")
			}
			w := httptest.NewRecorder()
			if got := Forwarded(p, w, r, "tr_", tc.id, gone); got != tc.want || p.forwarded != tc.forwardTo || (tc.want && w.Code != tc.status) {
				t.Errorf("Forwarded = %v (to %q, status %d), want %v (to %q, status %d)", got, p.forwarded, w.Code, tc.want, tc.forwardTo, tc.status)
			}
		})
	}
	if Forwarded(nil, httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil), "tr_", "tr_node-b.00", gone) {
		t.Error("forwarded without peers")
	}
}
