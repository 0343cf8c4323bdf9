package session

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/wire"
)

// ledger counts what one conversation hears and speaks, hands it to the meter and keeps the
// principal's quota. Its counters are atomics, counted by whoever hears (the input goroutine) or
// speaks (replies) and safe from any goroutine; meterLoop is its goroutine. Its fields but the
// counters are set by newConversation (ctx by run, before any goroutine starts) and only read
// after.
type ledger struct {
	meter     Meter
	budget    func(ctx context.Context, p Principal) (left time.Duration, limited bool, err error)
	principal Principal
	player    Player // the transport's (Media.Player): spoken seconds are what it played
	log       *slog.Logger
	ctx       context.Context // the conversation's
	// exhausted stops the replies and closes the conversation with insufficient_quota.
	exhausted func()
	kick      chan struct{} // cap 1: record now (turnEnded)

	budgetLimited atomic.Bool
	budgetLeft    atomic.Int64 // nanoseconds the principal may still use (when limited)
	// reservedSpeech, recordedSpeech: nanoseconds of reply audio reserved from the budget before
	// it was sent, and of those, the ones the meter has recorded (both only grow).
	reservedSpeech atomic.Int64
	// speakMu is held from a delta's reserve to its place in the outbox (say).
	speakMu        sync.Mutex
	recordedSpeech atomic.Int64
	heardSamples   atomic.Int64 // 16 kHz samples past the squelch, not yet metered
	heardForReply  atomic.Int64 // 16 kHz samples past the squelch since the last response.done
	spokenSamples  atomic.Int64 // 24 kHz samples sent, not yet metered
	// playedMetered is the Media.Player's Played already added to spokenSamples (takePlayed).
	playedMetered atomic.Int64
}

// meterLoop hands heard and spoken seconds to the meter every second and at each turn end. It is
// the ledger's goroutine. A write runs on its own bounded context, not the conversation's: a
// client that leaves while a write is in flight must not fail the write of what it was served.
func (l *ledger) meterLoop() {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	flush := func(turnEnded bool) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(l.ctx), meterWriteTimeout)
		l.flush(ctx, turnEnded)
		cancel()
	}
	for {
		select {
		case <-l.ctx.Done():
			flush(true)
			return
		case <-tick.C:
			flush(false)
		case <-l.kick:
			flush(true)
		}
	}
}

// meterWriteTimeout bounds one meter write (a store that does not answer keeps the counts and
// retries them; the conversation does not wait on it longer).
const meterWriteTimeout = 2 * time.Second

// flush hands what was heard and spoken since the last record to the meter, then asks what the
// principal has left.
func (l *ledger) flush(ctx context.Context, turnEnded bool) {
	l.takePlayed()
	heard := l.heardSamples.Swap(0)
	spoken := l.spokenSamples.Swap(0)
	if l.meter == nil || (heard == 0 && spoken == 0 && !turnEnded) {
		return
	}
	u := Usage{Subject: l.principal.Subject, Org: l.principal.Org, TurnEnded: turnEnded,
		Heard: audio.Duration(int(heard), hearRate), Spoken: audio.Duration(int(spoken), speakRate)}
	if err := l.meter.Record(ctx, u); err != nil {
		l.log.Error("meter record failed", "err", err, "subject", u.Subject)
	}
	l.refreshBudget(ctx)
}

// meterNow hands what was heard and spoken so far to the meter and waits until it is durable,
// before more audio is taken or sent: a crash (kill -9) then loses at most the one delta or append
// in flight per conversation, whatever the pace (a reply is sent far faster than real time). The
// meter shares one write among concurrent callers and does not wait while its store is away
// (its loop retries; the counts are kept), so a store outage does not stall the conversation.
// Its failures are the meter's to log.
func (l *ledger) meterNow() {
	if l.meter == nil {
		return
	}
	l.takePlayed()
	heard := l.heardSamples.Swap(0)
	spoken := l.spokenSamples.Swap(0)
	if heard == 0 && spoken == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(l.ctx), meterWriteTimeout)
	defer cancel()
	l.meter.Record(ctx, Usage{Subject: l.principal.Subject, Org: l.principal.Org, TurnEnded: true,
		Heard: audio.Duration(int(heard), hearRate), Spoken: audio.Duration(int(spoken), speakRate)})
}

// takePlayed counts, with a Media.Player, the reply audio it played since the last call as
// spoken: over a player (a WebRTC track) spoken seconds are what went out, not what was queued
// for it, so the audio still queued when the peer vanishes (up to the player's buffer, and all
// a paused player holds) is never billed. Without a player, say counts each delta as it is sent,
// as the client receives it. The played seconds are spent from the quota here too (spend closes
// the conversation when it is used up). Safe from any goroutine: Played only grows, and each
// sample is counted once.
func (l *ledger) takePlayed() {
	pl := l.player
	if pl == nil {
		return
	}
	played := pl.Played()
	for {
		last := l.playedMetered.Load()
		if played <= last {
			return
		}
		if l.playedMetered.CompareAndSwap(last, played) {
			l.spokenSamples.Add(played - last)
			if l.ctx.Err() == nil {
				l.spend(time.Duration(played-last) * time.Second / speakRate) // the quota too
			}
			return
		}
	}
}

// refreshBudget asks the meter what the principal has left. Audio reserved to be spoken whose
// record had not returned when the read began may be missing from what the meter says: it is
// taken off again, so that a refresh while replies speak never hands their seconds back.
func (l *ledger) refreshBudget(ctx context.Context) {
	if l.budget == nil || l.ctx.Err() != nil {
		return
	}
	recorded := l.recordedSpeech.Load()
	left, limited, err := l.budget(ctx, l.principal)
	if err != nil {
		l.log.Error("quota check failed", "err", err, "subject", l.principal.Subject)
		return
	}
	l.budgetLeft.Store(int64(left) - (l.reservedSpeech.Load() - recorded))
	l.budgetLimited.Store(limited)
}

// spend counts d (heard, already recorded) against the principal's budget; false when it is used
// up (the conversation is then being closed with insufficient_quota).
func (l *ledger) spend(d time.Duration) bool {
	if !l.budgetLimited.Load() {
		return true
	}
	if l.budgetLeft.Add(-int64(d)) > 0 {
		return true
	}
	l.exhausted()
	return false
}

// heard counts n samples (16 kHz) heard past the squelch for the meter and the reply's usage,
// records them and spends them from the quota; false when it is used up (the conversation is
// closing).
func (l *ledger) heard(n int) bool {
	l.heardSamples.Add(int64(n))
	l.heardForReply.Add(int64(n))
	if n > 0 {
		l.meterNow()
	}
	return l.spend(time.Duration(n) * time.Second / hearRate)
}

// handedOver counts n samples (16 kHz) of audio a client handed over in an item, to be
// transcribed: metered as heard and spent from the quota (no squelch: the client chose to send all
// of it), but not in a reply's usage. False when the quota is used up.
func (l *ledger) handedOver(n int) bool {
	l.heardSamples.Add(int64(n))
	l.meterNow()
	return l.spend(time.Duration(n) * time.Second / hearRate)
}

// rateLimits is what rate_limits.updated says after response.created: nothing without a quota;
// with one, a "tokens" entry that counts seconds of audio (heard + spoken) left today, resetting
// at the next UTC midnight (now is the server's clock). Its limit is not known here (Budget says
// what is left): omitted.
func (l *ledger) rateLimits(now time.Time) []wire.RateLimit {
	if !l.budgetLimited.Load() {
		return nil
	}
	left := max(time.Duration(l.budgetLeft.Load()), 0)
	now = now.UTC()
	midnight := now.Truncate(24 * time.Hour).Add(24 * time.Hour)
	return []wire.RateLimit{{Name: "tokens", Remaining: int(left / time.Second), ResetSeconds: midnight.Sub(now).Seconds()}}
}

// reserve takes up to d of the principal's budget for reply audio about to be sent, before it is
// sent: it returns what may be sent (d, less when less is left, 0 when nothing is). Replies
// speaking at once (out-of-band ones beside the conversation's) share what is left this way and
// together never pass it; checking after sending let each of them send one more delta (issue 18
// 8c: 8 of them used 6.4 s of a 5 s quota). What is reserved is counted in reservedSpeech; the
// caller adds it to recordedSpeech once the meter has recorded it (refreshBudget).
func (l *ledger) reserve(d time.Duration) time.Duration {
	if !l.budgetLimited.Load() {
		l.reservedSpeech.Add(int64(d))
		return d
	}
	for {
		left := l.budgetLeft.Load()
		if left <= 0 {
			return 0
		}
		take := min(int64(d), left)
		if l.budgetLeft.CompareAndSwap(left, left-take) {
			l.reservedSpeech.Add(take)
			return time.Duration(take)
		}
	}
}

// quotaExceeded stops the replies and closes the conversation with insufficient_quota (the
// ledger's exhausted).
func (c *conversation) quotaExceeded() {
	c.cancelReply("", errQuota)
	if !c.outbox.closed.Load() {
		c.closeWith(&wire.Error{Type: codeQuota, Code: codeQuota,
			Message: "This principal has used its speech seconds for today."}, EndPolicy, "quota exceeded")
	}
}

// turnEnded asks the meter loop to record now.
func (l *ledger) turnEnded() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}
