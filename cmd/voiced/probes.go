package main

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/speechcore"
)

// readyCheckTimeout bounds each dependency's answer to the readiness probe.
const readyCheckTimeout = time.Second

// The probes a load balancer or an orchestrator asks (no auth, like /health):
// GET /health/live answers 200 while the process serves; GET /health/ready answers 200 only when
// the speech core is warm, every store answers and the server is not draining, else 503 naming
// the first reason (speech_assets_not_mounted, speech_not_warm, meter_store_unavailable,
// ticket_store_unavailable, shutting_down). serveCore routes them.

func serveLive(w http.ResponseWriter, r *http.Request) {
	writeProbe(w, map[string]string{"status": "live"})
}

func (a *App) serveReady(w http.ResponseWriter, r *http.Request) {
	if err := a.ready(r.Context()); err != nil {
		w.Header().Set("Cache-Control", "no-store")
		door.WriteError(w, err)
		return
	}
	writeProbe(w, map[string]string{"status": "ready"})
}

// ready returns why this node should not be sent new work, nil when it should.
func (a *App) ready(ctx context.Context) error {
	if a.draining.Load() {
		return door.ErrShuttingDown
	}
	if a.Speech == nil {
		return speechcore.ErrNotMounted
	}
	if err := a.Speech.Ready(); err != nil {
		return err
	}
	a.mu.Lock()
	checks := a.readyChecks
	a.mu.Unlock()
	for _, c := range checks {
		cctx, cancel := context.WithTimeout(ctx, readyCheckTimeout)
		err := c.check(cctx)
		cancel()
		if err != nil {
			a.Log.Warn("readiness check failed", "check", c.name, "err", err.Error())
			return door.NewRefusal(http.StatusServiceUnavailable, c.name, "a store this node needs does not answer; see the server log")
		}
	}
	return nil
}

func writeProbe(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(v)
}
