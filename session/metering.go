package session

import (
	"context"
	"time"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/wire"
)

// meterLoop hands heard and spoken seconds to the meter every second and at each turn end. It is
// the meter's goroutine; the counts it hands on are the usage atomics.
// A write runs on its own bounded context, not the conversation's: a client that leaves while a
// write is in flight must not fail the write of what it was served.
func (c *conversation) meterLoop() {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	flush := func(turnEnded bool) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(c.ctx), meterWriteTimeout)
		c.flushMeter(ctx, turnEnded)
		cancel()
	}
	for {
		select {
		case <-c.ctx.Done():
			flush(true)
			return
		case <-tick.C:
			flush(false)
		case <-c.meterKick:
			flush(true)
		}
	}
}

// meterWriteTimeout bounds one meter write (a store that does not answer keeps the counts and
// retries them; the conversation does not wait on it longer).
const meterWriteTimeout = 2 * time.Second

func (c *conversation) flushMeter(ctx context.Context, turnEnded bool) {
	c.takePlayed()
	heard := c.heardSamples.Swap(0)
	spoken := c.spokenSamples.Swap(0)
	if c.engines.Meter == nil || (heard == 0 && spoken == 0 && !turnEnded) {
		return
	}
	u := Usage{Subject: c.grant.Principal.Subject, Org: c.grant.Principal.Org, TurnEnded: turnEnded,
		Heard: audio.Duration(int(heard), hearRate), Spoken: audio.Duration(int(spoken), speakRate)}
	if err := c.engines.Meter.Record(ctx, u); err != nil {
		c.log.Error("meter record failed", "err", err, "subject", u.Subject)
	}
	c.refreshBudget(ctx)
}

// meterNow hands what was heard and spoken so far to the meter and waits until it is durable,
// before more audio is taken or sent: a crash (kill -9) then loses at most the one delta or append
// in flight per conversation, whatever the pace (a reply is sent far faster than real time). The
// meter shares one write among concurrent callers and does not wait while its store is away
// (its loop retries; the counts are kept), so a store outage does not stall the conversation.
// Its failures are the meter's to log.
func (c *conversation) meterNow() {
	if c.engines.Meter == nil {
		return
	}
	c.takePlayed()
	heard := c.heardSamples.Swap(0)
	spoken := c.spokenSamples.Swap(0)
	if heard == 0 && spoken == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.ctx), meterWriteTimeout)
	defer cancel()
	c.engines.Meter.Record(ctx, Usage{Subject: c.grant.Principal.Subject, Org: c.grant.Principal.Org, TurnEnded: true,
		Heard: audio.Duration(int(heard), hearRate), Spoken: audio.Duration(int(spoken), speakRate)})
}

// takePlayed counts, with a Media.Player, the reply audio it played since the last call as
// spoken: over a player (a WebRTC track) spoken seconds are what went out, not what was queued
// for it, so the audio still queued when the peer vanishes (up to the player's buffer, and all
// a paused player holds) is never billed. Without a player, say counts each delta as it is sent,
// as the client receives it. The played seconds are spent from the quota here too (spend closes
// the conversation when it is used up). Safe from any goroutine: Played only grows, and each
// sample is counted once.
func (c *conversation) takePlayed() {
	pl := c.media.Player
	if pl == nil {
		return
	}
	played := pl.Played()
	for {
		last := c.playedMetered.Load()
		if played <= last {
			return
		}
		if c.playedMetered.CompareAndSwap(last, played) {
			c.spokenSamples.Add(played - last)
			if c.ctx.Err() == nil {
				c.spend(time.Duration(played-last) * time.Second / speakRate) // the quota too
			}
			return
		}
	}
}

// refreshBudget asks the meter what the principal has left. Audio reserved to be spoken whose
// record had not returned when the read began may be missing from what the meter says: it is
// taken off again, so that a refresh while replies speak never hands their seconds back.
func (c *conversation) refreshBudget(ctx context.Context) {
	if c.engines.Budget == nil || c.ctx.Err() != nil {
		return
	}
	recorded := c.recordedSpeech.Load()
	left, limited, err := c.engines.Budget(ctx, c.grant.Principal)
	if err != nil {
		c.log.Error("quota check failed", "err", err, "subject", c.grant.Principal.Subject)
		return
	}
	c.budgetLeft.Store(int64(left) - (c.reservedSpeech.Load() - recorded))
	c.budgetLimited.Store(limited)
}

// spend counts d (heard, already recorded) against the principal's budget; false when it is used
// up (the conversation is then being closed with insufficient_quota).
func (c *conversation) spend(d time.Duration) bool {
	if !c.budgetLimited.Load() {
		return true
	}
	if c.budgetLeft.Add(-int64(d)) > 0 {
		return true
	}
	c.quotaExceeded()
	return false
}

// reserve takes up to d of the principal's budget for reply audio about to be sent, before it is
// sent: it returns what may be sent (d, less when less is left, 0 when nothing is). Replies
// speaking at once (out-of-band ones beside the conversation's) share what is left this way and
// together never pass it; checking after sending let each of them send one more delta (issue 18
// 8c: 8 of them used 6.4 s of a 5 s quota). What is reserved is counted in reservedSpeech; the
// caller adds it to recordedSpeech once the meter has recorded it (refreshBudget).
func (c *conversation) reserve(d time.Duration) time.Duration {
	if !c.budgetLimited.Load() {
		c.reservedSpeech.Add(int64(d))
		return d
	}
	for {
		left := c.budgetLeft.Load()
		if left <= 0 {
			return 0
		}
		take := min(int64(d), left)
		if c.budgetLeft.CompareAndSwap(left, left-take) {
			c.reservedSpeech.Add(take)
			return time.Duration(take)
		}
	}
}

// quotaExceeded stops the replies and closes the conversation with insufficient_quota.
func (c *conversation) quotaExceeded() {
	c.cancelReply("", errQuota)
	if !c.closed.Load() {
		c.closeWith(&wire.Error{Type: codeQuota, Code: codeQuota,
			Message: "This principal has used its speech seconds for today."}, EndPolicy, "quota exceeded")
	}
}

// turnEnded asks the meter loop to record now.
func (c *conversation) turnEnded() {
	select {
	case c.meterKick <- struct{}{}:
	default:
	}
}
