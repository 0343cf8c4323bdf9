package session

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Usage per session (issue 20 item 4): each conversation, call and transcription session writes
// a record of its own through the Meter when it implements SessionRecorder (bridge.Meter: the
// meter's store). Written when the session starts (open), again at most once a second as its
// metered seconds grow (the ledger's records pass through tally), and when it ends, with why.
// A kill -9 leaves it open with the seconds of its last write.

// SessionUsage is one session's record.
type SessionUsage struct {
	ID           string // the session's id (session.created's session.id)
	Subject, Org string
	Door         string // "conversation" or "transcription"
	Transport    string // "websocket" or "webrtc"
	Start        time.Time
	End          time.Time // zero while open
	Heard        time.Duration
	Spoken       time.Duration
	EndReason    string
}

// SessionRecorder is a Meter that also keeps session records.
type SessionRecorder interface {
	RecordSession(ctx context.Context, u SessionUsage) error
}

// Doors and transports of a session record.
const (
	UsageDoorConversation  = "conversation"
	UsageDoorTranscription = "transcription"
	UsageWebSocket         = "websocket"
	UsageWebRTC            = "webrtc"
	// EndClientLeft is the end reason when the client left (no close of the session's own).
	EndClientLeft = "client_closed"
)

// sessionRecordEvery bounds how often a session's growing seconds are rewritten.
const sessionRecordEvery = time.Second

// sessionUsage is the session's record as it grows: mu guards it (the ledger's writers and the
// input goroutine's begin and end).
type sessionUsage struct {
	rec SessionRecorder
	log *slog.Logger
	mu  sync.Mutex
	u   SessionUsage
	// written: the last write; begun: the open record was written (a session that never
	// started has none).
	written time.Time
	begun   bool
}

// tally wraps the conversation's Meter: each record's seconds also count toward the session's
// own record (c.usage), set here when m keeps session records.
func (c *conversation) tally(m Meter) Meter {
	rec, ok := m.(SessionRecorder)
	if !ok || m == nil {
		return m
	}
	c.usage = &sessionUsage{rec: rec, log: c.log}
	return tallyMeter{Meter: m, u: c.usage}
}

type tallyMeter struct {
	Meter
	u *sessionUsage
}

func (t tallyMeter) Record(ctx context.Context, u Usage) error {
	err := t.Meter.Record(ctx, u)
	t.u.add(ctx, u.Heard, u.Spoken)
	return err
}

// begin writes the open record once the session has started (on the input goroutine).
func (s *sessionUsage) begin(c *conversation) {
	if s == nil {
		return
	}
	transport := UsageWebSocket
	if c.media.TrackInput {
		transport = UsageWebRTC
	}
	s.mu.Lock()
	s.u.ID, s.u.Subject, s.u.Org = c.in.sess.ID, c.grant.Principal.Subject, c.grant.Principal.Org
	s.u.Door, s.u.Transport, s.u.Start = doorOf(c), transport, c.srv.cfg.Now()
	s.begun = true
	u := s.u
	s.written = time.Now()
	s.mu.Unlock()
	s.write(c.ctx, u)
}

func doorOf(c *conversation) string {
	if c.in.sess.Transcribes() {
		return UsageDoorTranscription
	}
	return UsageDoorConversation
}

// add counts a record's seconds and rewrites the record when the last write is a second old.
func (s *sessionUsage) add(ctx context.Context, heard, spoken time.Duration) {
	s.mu.Lock()
	s.u.Heard += heard
	s.u.Spoken += spoken
	due := s.begun && time.Since(s.written) >= sessionRecordEvery
	if due {
		s.written = time.Now()
	}
	u := s.u
	s.mu.Unlock()
	if due {
		s.write(ctx, u)
	}
}

// end writes the closed record: its end, its seconds and why it ended (after the last flush).
func (s *sessionUsage) end(c *conversation) {
	if s == nil {
		return
	}
	reason := EndClientLeft
	if r := c.outbox.reason.Load(); r != nil && *r != "" {
		reason = *r
	} else if c.ctx.Err() != nil && context.Cause(c.ctx) != context.Canceled {
		reason = context.Cause(c.ctx).Error()
	}
	s.mu.Lock()
	if !s.begun {
		s.mu.Unlock()
		return
	}
	s.u.End, s.u.EndReason, s.u.Door = c.srv.cfg.Now(), reason, doorOf(c)
	u := s.u
	s.mu.Unlock()
	s.writeFinal(u)
}

// The closed record is the one that says what a session cost: a failed write of it (the store
// away for a moment) is tried again, finalRecordTries times at most, backoff doubling from
// finalRecordBackoff, all within finalRecordBudget. end runs before the conversation releases
// its meter hold (run's defers), so a stopping server's meter Close waits for these tries
// (bounded by its CloseWait): the record is drained at shutdown, not dropped.
const (
	finalRecordTries   = 5
	finalRecordBackoff = 100 * time.Millisecond
	finalRecordBudget  = 5 * time.Second
)

// writeFinal writes the closed record, retried as above; it returns whether it was written.
func (s *sessionUsage) writeFinal(u SessionUsage) bool {
	ctx, cancel := context.WithTimeout(context.Background(), finalRecordBudget)
	defer cancel()
	wait := finalRecordBackoff
	for try := 1; ; try++ {
		tryCtx, cancelTry := context.WithTimeout(ctx, meterWriteTimeout)
		err := s.rec.RecordSession(tryCtx, u)
		cancelTry()
		if err == nil {
			if try > 1 {
				s.log.Info("session usage record written after a retry", "session", u.ID, "tries", try)
			}
			return true
		}
		if try == finalRecordTries {
			s.log.Error("session usage record not written; its open record stays", "err", err, "session", u.ID, "tries", try)
			return false
		}
		s.log.Warn("session usage record not written; trying again", "err", err, "session", u.ID, "try", try, "in", wait.String())
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			s.log.Error("session usage record not written in its budget; its open record stays", "err", err, "session", u.ID, "tries", try)
			return false
		}
		wait *= 2
	}
}

func (s *sessionUsage) write(ctx context.Context, u SessionUsage) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), meterWriteTimeout)
	defer cancel()
	if err := s.rec.RecordSession(ctx, u); err != nil {
		s.log.Warn("session usage record not written", "err", err, "session", u.ID) // the session goes on
	}
}
