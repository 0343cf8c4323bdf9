package speechcore

import (
	"net/http"
	"time"

	"github.com/voiced/voiced/door"
)

// The engines' refusals (door.Refusal: status, name, message safe to show): Ready answers the
// first two; every door and the conversation show them as they are.
var (
	ErrNotMounted = door.NewRefusal(http.StatusServiceUnavailable, "speech_assets_not_mounted",
		"no speech assets are mounted: start voiced with --speech-assets DIR or VOICED_SPEECH_ASSETS=DIR; "+
			"DIR holds MODELS.sha256 and models/whisper-small/, models/kokoro-82m/, models/silero-vad/ (see README, 'The speech-asset mount')").WithReason(door.ReasonNotMounted)
	ErrNotWarm = door.NewRefusal(http.StatusServiceUnavailable, "speech_not_warm",
		"the speech models are still loading and warming up; retry shortly").WithRetryAfter(2 * time.Second).WithReason(door.ReasonNotWarm)
	ErrQueueFull = door.NewRefusal(http.StatusServiceUnavailable, "queue_full",
		"the model's queue is full; retry later").WithRetryAfter(time.Second)
)
