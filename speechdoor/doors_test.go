package speechdoor

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/speechcore"
	"github.com/voiced/voiced/speechcore/runtime"
)

func TestGuardAndFallbackRoutes(t *testing.T) {
	lib := runtime.LibPathFromEnv()
	if lib == "" {
		t.Skip("VOICED_ORT_LIB is not set: run through make or eval \"$(make -s env)\"")
	}
	speech, err := speechcore.New(speechcore.Config{Runtime: runtime.Config{LibPath: lib}})
	if err != nil {
		t.Fatal(err)
	}
	if err := speech.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer speech.Close()
	svc, err := New(speech, Config{})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	svc.Register(mux)
	for _, pattern := range SpeechRoutes {
		method, path, _ := strings.Cut(pattern, " ")
		path = strings.ReplaceAll(path, "{id}", "abc")
		t.Run(pattern, func(t *testing.T) {
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
			var f door.ErrorFrame
			json.Unmarshal(rec.Body.Bytes(), &f)
			if rec.Code != http.StatusServiceUnavailable || f.Name != "speech_assets_not_mounted" {
				t.Errorf("%s: %d %+v, want 503 speech_assets_not_mounted", pattern, rec.Code, f)
			}
		})
	}
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/speech/health", nil))
	var f door.ErrorFrame
	json.Unmarshal(rec.Body.Bytes(), &f)
	if rec.Code != http.StatusServiceUnavailable || f.Name != "speech_assets_not_mounted" {
		t.Errorf("speech health with nothing mounted: %d %s, want 503 speech_assets_not_mounted", rec.Code, rec.Body.String())
	}
}

// /v1/speech/health is the engines' health with this door's session gate: a mounted, warm
// service reports its models loaded and the gate's cap and open sessions.
func TestSpeechHealthReportsTheGate(t *testing.T) {
	speech := startSpeech(t, fixtureMount(t, &hearingMount, "voiced-hearing-"), nil)
	svc, err := New(speech, Config{MaxSessions: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	mux := http.NewServeMux()
	svc.Register(mux)
	release, err := svc.Gate.Acquire("")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/speech/health", nil))
	var h struct {
		Warm     bool
		Sessions struct{ Open, Cap int }
		VAD      struct{ Loaded bool }
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &h); err != nil || rec.Code != http.StatusOK {
		t.Fatalf("speech health: %d %s (%v)", rec.Code, rec.Body.String(), err)
	}
	if !h.Warm || !h.VAD.Loaded || h.Sessions.Open != 1 || h.Sessions.Cap != 3 {
		t.Errorf("speech health = %+v, want warm, vad loaded, sessions {1 3}", h)
	}
	if cc := rec.Header().Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control %q, want no-store", cc)
	}
}
