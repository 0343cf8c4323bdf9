package bridge

import (
	"context"

	"github.com/voiced/voiced/meter"
	"github.com/voiced/voiced/session"
)

// Meter hands a conversation's seconds to the meter under the conversation door; a turn's end,
// and each piece of audio the conversation serves (session's meterNow), writes them durably
// (meter.Record).
type Meter struct{ M *meter.Meter }

var _ session.MeterHolder = Meter{}

// Record adds one record's seconds.
func (h Meter) Record(ctx context.Context, u session.Usage) error {
	return h.M.Record(ctx, u.Subject, u.Org, meter.DoorConversation, u.Heard.Seconds(), u.Spoken.Seconds(), u.TurnEnded)
}

// Hold keeps the meter's Close waiting (bounded) until the conversation's last record.
func (h Meter) Hold() (release func()) { return h.M.Hold() }
