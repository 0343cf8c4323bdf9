package speechdoor

import (
	"encoding/json"
	"net/http"

	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/speechcore"
)

// routes claims the speech routes for their doors: one line per door, added by the door's author,
// e.g. s.Handle("GET /v1/transcribe", &TranscribeDoor{svc: s}). Register calls it once.
func (s *Doors) routes() {
	s.hearingRoutes()  // /v1/transcribe, /v1/audio/transcriptions, /v1/audio/transcript (hearing.go)
	s.speakingRoutes() // /v1/synthesize, /v1/speak/stream, /v1/audio/speech (synthesize.go)
}

// Router is where routes are put: *http.ServeMux, or the server's token-checking router.
type Router interface {
	Handle(pattern string, handler http.Handler)
}

// Handle claims a speech route for a door. Call it before Register; Register wraps the door with
// Guard, so the door itself runs only on a mounted, warm service.
func (s *Doors) Handle(pattern string, door http.Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.doors[pattern]; dup {
		panic("speechdoor: route registered twice: " + pattern)
	}
	s.doors[pattern] = door
}

// Register puts every speech route on r. A route whose door is not written yet answers
// 501 not_implemented when mounted; every speech route answers 503 speech_assets_not_mounted
// when nothing is mounted, and 503 speech_not_warm before the models are warm.
func (s *Doors) Register(r Router) {
	s.routes()
	r.Handle("GET /v1/speech/health", http.HandlerFunc(s.serveHealth))
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, pattern := range SpeechRoutes {
		door, ok := s.doors[pattern]
		if !ok {
			door = notImplemented(pattern)
		}
		r.Handle(pattern, s.Guard(door))
	}
	for pattern, door := range s.doors {
		if !isSpeechRoute(pattern) {
			r.Handle(pattern, s.Guard(door))
		}
	}
}

// SpeechRoutes are the raw speech doors (SPEC §3). The conversation's routes (/v1/voice*,
// /v1/realtime*) are the session's; it refuses them itself while the engines are not ready.
var SpeechRoutes = []string{
	"GET /v1/transcribe",
	"GET /v1/synthesize",
	"GET /v1/speak/stream",
	"POST /v1/audio/transcriptions",
	"POST /v1/audio/translations",
	"POST /v1/audio/speech",
	"POST /v1/audio/transcript",
	"POST /v1/audio/transcript/{id}",
	"DELETE /v1/audio/transcript/{id}",
}

func isSpeechRoute(pattern string) bool {
	for _, p := range SpeechRoutes {
		if p == pattern {
			return true
		}
	}
	return false
}

// Guard answers 503 speech_assets_not_mounted when nothing is mounted and 503 speech_not_warm
// before the models are warm (speechcore.Service.Ready); otherwise it hands the request to next.
func (s *Doors) Guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.speech.Ready(); err != nil {
			s.refuse(w, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// ErrNotImplemented answers a speech route whose door is not built into this binary.
var ErrNotImplemented = door.NewRefusal(http.StatusNotImplemented, "not_implemented",
	"this door is not built into this voiced binary")

func notImplemented(pattern string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		door.WriteError(w, door.Refuse(ErrNotImplemented, pattern+" is not built into this voiced binary"))
	})
}

// serveHealth is GET /v1/speech/health: the engines' health (speechcore.Service.Health) and this
// door's session gate. With nothing mounted it answers 503 speech_assets_not_mounted like the
// other speech doors (reference/000); before warm-up it reports warm:false (a load balancer's
// readiness is GET /health/ready).
func (s *Doors) serveHealth(w http.ResponseWriter, r *http.Request) {
	if !s.speech.Mounted() {
		s.refuse(w, speechcore.ErrNotMounted)
		return
	}
	h := s.speech.Health()
	h.Sessions = speechcore.SessionsHealth{Open: s.Gate.Open(), Cap: s.Gate.Cap()}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(h)
}
