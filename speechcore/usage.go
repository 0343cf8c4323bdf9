package speechcore

// The raw doors meter under one principal: the service token is not a person. speechcore does
// not import the meter (imports run one way); cmd/voiced hands the meter in as a UsageRecorder.
const (
	// UsagePrincipal is the principal the raw doors meter under (meter.ServicePrincipal).
	UsagePrincipal = "service"
	// UsageDoorTranscribe is /v1/transcribe, /v1/audio/transcriptions, /v1/audio/transcript
	// (meter.DoorTranscribe).
	UsageDoorTranscribe = "transcribe"
	// UsageDoorSynthesize is /v1/synthesize, /v1/speak/stream, /v1/audio/speech (meter.DoorSynthesize).
	UsageDoorSynthesize = "synthesize"
)

// UsageRecorder counts seconds heard and spoken (*meter.Meter). Add must not block on a store.
type UsageRecorder interface {
	Add(principal, org, door string, heard, spoken float64)
}

// SetUsage hands the doors a recorder; nil (the default) meters nothing. Call it before Start.
func (s *Service) SetUsage(u UsageRecorder) { s.usage = u }

// heard records seconds of audio put in front of the decoder by a raw door.
func (s *Service) heard(seconds float64) {
	if s.usage != nil && seconds > 0 {
		s.usage.Add(UsagePrincipal, "", UsageDoorTranscribe, seconds, 0)
	}
}

// spoken records seconds of audio a raw door sent.
func (s *Service) spoken(seconds float64) {
	if s.usage != nil && seconds > 0 {
		s.usage.Add(UsagePrincipal, "", UsageDoorSynthesize, 0, seconds)
	}
}
