package session

import (
	"fmt"
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
