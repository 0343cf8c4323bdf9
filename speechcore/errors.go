package speechcore

import (
	"net/http"
	"time"

	"github.com/voiced/voiced/door"
)

// The engines' refusals (door.Refusal: status, name, message safe to show): Ready answers the
// first two; every door and the conversation show them as they are.
var (
	ErrNotMounted = &door.Refusal{Status: http.StatusServiceUnavailable, Name: "speech_assets_not_mounted",
		Message: "no speech assets are mounted: start voiced with --speech-assets DIR or VOICED_SPEECH_ASSETS=DIR; " +
			"DIR holds MODELS.sha256 and models/whisper-small/, models/kokoro-82m/, models/silero-vad/ (see README, 'The speech-asset mount')",
		Reason: door.ReasonNotMounted}
	ErrNotWarm = &door.Refusal{Status: http.StatusServiceUnavailable, Name: "speech_not_warm",
		Message: "the speech models are still loading and warming up; retry shortly", RetryAfter: 2 * time.Second,
		Reason: door.ReasonNotWarm}
	ErrQueueFull = &door.Refusal{Status: http.StatusServiceUnavailable, Name: "queue_full",
		Message: "the model's queue is full; retry later", RetryAfter: time.Second}
)
