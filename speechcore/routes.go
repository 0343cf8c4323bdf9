package speechcore

// routes claims the speech routes for their doors: one line per door, added by the door's author,
// e.g. s.Handle("GET /v1/transcribe", &TranscribeDoor{svc: s}). Register calls it once.
func (s *Service) routes() {
	s.hearingRoutes()  // /v1/transcribe, /v1/audio/transcriptions, /v1/audio/transcript (hearing.go)
	s.speakingRoutes() // /v1/synthesize, /v1/speak/stream, /v1/audio/speech (synthesize.go)
}
