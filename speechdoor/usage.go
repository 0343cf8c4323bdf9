package speechdoor

import (
	"context"
	"time"
)

// The raw doors meter under the request's speaker (speaker.go), UsagePrincipal when it names nobody. speechdoor does
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

// DurableUsage is a UsageRecorder that can make what it was told durable now and that waits for
// its writers when it closes (*meter.Meter). With one, each raw door holds it for its lifetime
// (a request, a socket) and syncs after every chunk it serves, as a conversation does: a kill -9
// loses at most the chunk in flight, and a server stopping does not cut off a door's last seconds.
type DurableUsage interface {
	UsageRecorder
	// Sync returns once what was added is durable; at once (an error) while the store is away.
	Sync(ctx context.Context) error
	// Hold registers a writer until release; the recorder's close waits for it (bounded).
	Hold() (release func())
}

// usageSyncTimeout bounds one durable write a door waits for (the recorder keeps what it could
// not write and retries it; the door does not wait longer).
const usageSyncTimeout = 2 * time.Second

// SetUsage hands the doors a recorder; nil (the default) meters nothing. Call it before Register.
func (s *Doors) SetUsage(u UsageRecorder) { s.usage = u }

// holdUsage holds a durable recorder for a door's lifetime: defer s.holdUsage()().
func (s *Doors) holdUsage() (release func()) {
	if d, ok := s.usage.(DurableUsage); ok {
		return d.Hold()
	}
	return func() {}
}

// syncUsage waits until what was added is durable, on its own bounded context: a client that
// leaves mid-write must not cancel the write of what it was served. Failures are the recorder's
// to log and retry.
func (s *Doors) syncUsage() {
	d, ok := s.usage.(DurableUsage)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), usageSyncTimeout)
	defer cancel()
	_ = d.Sync(ctx)
}
