package session

import (
	"fmt"
	"sync"
	"time"

	"github.com/voiced/voiced/wire"
)

// Client event rate limit: a token bucket per connection.
//
// OpenAI publishes no event rate for the Realtime API (its rate_limits.updated counts tokens and
// requests), so the defaults are far above what a real client sends: agents-js, agents-python and
// Pipecat send a session.update or two at connect, a conversation.item.create + response.create
// per text turn, an item.retrieve after each transcription and a truncate per barge-in; a client
// restoring a conversation sends one conversation.item.create per past item at once (the burst).
// input_audio_buffer.append is not counted: clients send one every 20–100 ms (Twilio media
// streams 20 ms: 50 a second), a file may be uploaded as fast as the socket takes it, and the read
// loop hears each append before reading the next, so audio is paced by TCP backpressure
// (TestFaultsAudioFlood) and bounded by --session-limit.
const (
	// DefaultEventRate is the client events a connection may send per second, sustained.
	DefaultEventRate = 100
	// DefaultEventBurst is how many it may send at once.
	DefaultEventBurst = 500
)

// codeRateLimited names the refusal of an event over the connection's rate.
const codeRateLimited = "rate_limit_exceeded"

// eventLimiter is one connection's bucket, owned by the input goroutine. An event over the rate
// is dropped and answered with an error event; the drops have a bucket of their own (the same
// rate and burst): a client that keeps sending once it is empty — more than twice its allowance —
// is not a client that reads its errors, and the conversation is closed (1008).
type eventLimiter struct {
	rate, burst float64 // per second, at once; rate <= 0: no limit
	tokens      float64 // events that may be sent now
	strikes     float64 // drops that may still be answered before the close
	last        time.Time
}

func newEventLimiter(rate float64, burst int) eventLimiter {
	return eventLimiter{rate: rate, burst: float64(burst), tokens: float64(burst), strikes: float64(burst)}
}

// verdict of one event.
type verdict int

const (
	allowed verdict = iota
	dropped         // over the rate: refuse it by name
	abusive         // over the rate and out of strikes: close the conversation
)

// take spends one event at now.
func (l *eventLimiter) take(now time.Time) verdict {
	if l.rate <= 0 {
		return allowed
	}
	if !l.last.IsZero() {
		refill := now.Sub(l.last).Seconds() * l.rate
		l.tokens = min(l.burst, l.tokens+refill)
		l.strikes = min(l.burst, l.strikes+refill)
	}
	l.last = now
	if l.tokens >= 1 {
		l.tokens--
		return allowed
	}
	if l.strikes >= 1 {
		l.strikes--
		return dropped
	}
	return abusive
}

// errRateLimited is the error event for a dropped event.
func (l *eventLimiter) errRateLimited(eventID string) *wire.Error {
	return &wire.Error{Type: wire.TypeInvalidRequest, Code: codeRateLimited, EventID: eventID,
		Message: fmt.Sprintf("Too many client events: this connection may send %g a second (%g at once; "+
			"input_audio_buffer.append is not counted). The event was dropped; keep sending this fast and the session is closed.",
			l.rate, l.burst)}
}

// Client event bytes: a token bucket per principal, in bytes.
//
// The event rate counts events, not their size, and encoding/json reads a large event several
// times over: one 12 MiB response.create cost the server 470 ms of CPU (the built binary, this
// repository's test box; 845 ms measured elsewhere), so a client sending such events at any event
// rate kept a core busy. Every client event but an input_audio_buffer.append now spends its bytes
// from its principal's budget before it is decoded; over it the event is refused by name without
// being read. Appends are not charged: their audio is bounded by --session-limit, and the flat
// shape every client sends is read without encoding/json (wire.DecodeAppend); one that is not is
// charged until it has decoded as an append, then given back.
//
// The budget is the principal's (its JWT subject), on this node, not the connection's: a client
// closed for flooding that reconnects finds its budget as it left it.
const (
	// DefaultEventBytes is the bytes a principal's events may carry per second, sustained: at
	// encoding/json's ~25 MB/s, about 4% of a core. A client's own traffic is far under it: a
	// session.update with the longest instructions and tools wire allows is ~1 MiB, once; a text
	// turn's item.create and response.create are a few KiB.
	DefaultEventBytes = 1 << 20
	// DefaultEventBytesBurst is how many bytes it may send at once: the socket's ReadLimit, so a
	// principal that has not spent its budget may send any one event the socket accepts (an
	// item.create restoring a minute of past pcm16 24 kHz audio is 3.8 MB of base64; an
	// input_image data URI a few MB).
	DefaultEventBytesBurst = ReadLimit
	// MinEventBytesBurst is the smallest burst the Config accepts: below it the longest
	// session.update wire allows (instructions and tools, 512 KiB each) could never be sent.
	MinEventBytesBurst = 1 << 20
)

// principalBuckets holds a token bucket per principal (JWT subject), in the unit its user counts
// (event bytes, mints); safe from any goroutine.
type principalBuckets struct {
	rate, burst float64 // per second, at once; rate <= 0: no limit

	mu      sync.Mutex
	buckets map[string]*tokenBucket // by principal (JWT subject)
	swept   int                     // len(buckets) after the last sweep
}

func newPrincipalBuckets(rate, burst float64) *principalBuckets {
	return &principalBuckets{rate: rate, burst: burst, buckets: map[string]*tokenBucket{}}
}

// take spends n of principal's tokens at now; when fewer are left it spends nothing and returns
// false and the wait until n would be there.
func (b *principalBuckets) take(principal string, n float64, now time.Time) (wait time.Duration, ok bool) {
	if b.rate <= 0 {
		return 0, true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	k := b.buckets[principal]
	if k == nil {
		// The map holds the principals seen within burst/rate (16 s by default for event bytes,
		// 20 s for mints) of their last take; sweeping when it has doubled keeps that amortised
		// O(1) a take.
		if len(b.buckets) >= 2*b.swept+64 {
			b.sweep(now)
		}
		k = &tokenBucket{tokens: b.burst, last: now}
		b.buckets[principal] = k
	}
	if k.take(n, now, b.rate, b.burst) {
		return 0, true
	}
	return time.Duration((n - k.tokens) / b.rate * float64(time.Second)), false
}

// giveBack returns n tokens taken from principal's bucket (an event that decoded as an append).
func (b *principalBuckets) giveBack(principal string, n float64) {
	if b.rate <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if k := b.buckets[principal]; k != nil {
		k.tokens = min(b.burst, k.tokens+n)
	}
}

// sweep forgets the principals whose bucket is full again: a new one is the same.
func (b *principalBuckets) sweep(now time.Time) {
	for p, k := range b.buckets {
		if k.tokens+now.Sub(k.last).Seconds()*b.rate >= b.burst {
			delete(b.buckets, p)
		}
	}
	b.swept = len(b.buckets)
}

// tokenBucket holds tokens that refill at a rate up to a burst; its owner serialises its use.
type tokenBucket struct {
	tokens float64
	last   time.Time
}

// take refills the bucket to now, then spends n tokens: false, spending nothing, when fewer are
// there.
func (k *tokenBucket) take(n float64, now time.Time, rate, burst float64) bool {
	if since := now.Sub(k.last); since > 0 {
		k.tokens = min(burst, k.tokens+since.Seconds()*rate)
		k.last = now
	}
	if k.tokens < n {
		return false
	}
	k.tokens -= n
	return true
}

// byteLimiter is one connection's side of its principal's byte budget, owned by the input
// goroutine: an event over the budget is dropped and answered with an error event; the drops have
// a bucket of their own (the budget's rate and burst, in bytes), and a connection that keeps
// sending once it is empty is closed (1008), as the event rate's are.
type byteLimiter struct {
	budgets   *principalBuckets
	principal string
	strikes   tokenBucket
}

func newByteLimiter(b *principalBuckets, principal string, now time.Time) byteLimiter {
	return byteLimiter{budgets: b, principal: principal, strikes: tokenBucket{tokens: b.burst, last: now}}
}

// take spends an event of n bytes at now.
func (l *byteLimiter) take(n int, now time.Time) verdict {
	if _, ok := l.budgets.take(l.principal, float64(n), now); ok {
		return allowed
	}
	// An event over the burst can never pass: it is refused, and strikes the whole bucket.
	if l.strikes.take(min(float64(n), l.budgets.burst), now, l.budgets.rate, l.budgets.burst) {
		return dropped
	}
	return abusive
}

// errOverBytes is the error event for an event dropped over the byte budget.
func (l *byteLimiter) errOverBytes(eventID string, n int) *wire.Error {
	what := "was dropped unread; keep sending this much and the session is closed"
	if float64(n) > l.budgets.burst {
		what = "can never be accepted: it was dropped unread"
	}
	return &wire.Error{Type: wire.TypeInvalidRequest, Code: codeRateLimited, EventID: eventID,
		Message: fmt.Sprintf("Too many bytes in client events: this principal may send %s a second in events other than "+
			"input_audio_buffer.append (%s at once). This event carries %s and %s.",
			sizeText(int(l.budgets.rate)), sizeText(int(l.budgets.burst)), sizeText(n), what)}
}
