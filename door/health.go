package door

// VoiceHealth is the voice section of /health and the body of /v1/voice/health.
type VoiceHealth struct {
	OK       bool `json:"ok"`
	Busy     int  `json:"busy"`
	Capacity int  `json:"capacity"`
}

// VoiceReporter reports the realtime conversations' capacity; the session package satisfies it.
type VoiceReporter interface {
	VoiceHealth() VoiceHealth
}
