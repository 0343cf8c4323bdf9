package main

import (
	"encoding/json"
	"net/http"

	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/speechcore"
)

// health is GET /health (no auth): {status, version, speech:{…}, voice:{ok, busy, capacity}}.
type health struct {
	Status  string             `json:"status"`
	Version string             `json:"version"`
	Speech  speechcore.Summary `json:"speech"`
	Voice   door.VoiceHealth   `json:"voice"`
}

func (a *App) serveHealth(w http.ResponseWriter, r *http.Request) {
	h := health{Status: "ok", Version: a.Version, Speech: speechcore.Summary{Built: true}}
	if a.Speech != nil {
		h.Speech = a.Speech.Summary()
	}
	if a.Voice != nil {
		h.Voice = a.Voice.VoiceHealth()
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(h)
}
