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

var _ session.SessionRecorder = Meter{}

// RecordSession writes a session's usage record (issue 20 item 4).
func (h Meter) RecordSession(ctx context.Context, u session.SessionUsage) error {
	r := meter.SessionRecord{ID: u.ID, Principal: u.Subject, Org: u.Org, Door: u.Door, Transport: u.Transport,
		Start: u.Start, Heard: u.Heard.Seconds(), Spoken: u.Spoken.Seconds(), EndReason: u.EndReason}
	if !u.End.IsZero() {
		end := u.End
		r.End = &end
	}
	return h.M.PutSession(ctx, r)
}
