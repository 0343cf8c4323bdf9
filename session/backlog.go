package session

import "sync/atomic"

// maxTranscribing bounds the committed audio (16 kHz samples) one conversation may have waiting
// for its transcription: each waiting turn holds its float32 audio (64 KB a second) until Whisper
// has heard it, and a client commits as fast as it can send (2 min of audio every few
// milliseconds over a fast link) while Whisper hears a few windows a second, so without a bound
// the turns waiting held up to --session-limit of audio (an hour: 230 MB). Two full turns
// (maxInputAudio each, 14.6 MiB): a conversation at real time never has more than the turn
// being heard and the one after it waiting.
const maxTranscribing = 2 * maxInputAudio * hearRate / 1000

// backlog is the committed audio waiting for transcription: pending is added to by the input
// goroutine (the only one that commits) and given back by the workers; freed wakes the input
// goroutine when some is given back.
type backlog struct {
	pending atomic.Int64
	freed   chan struct{}
}

// awaitTranscribing counts n samples of audio about to be transcribed, first waiting (on the
// input goroutine: the client's further events and audio wait in the transport, as when the
// server reads slower than it is sent to) until they fit maxTranscribing; a turn alone always
// fits. False when the conversation ended while waiting.
func (c *conversation) awaitTranscribing(n int) bool {
	for {
		p := c.backlog.pending.Load()
		if p == 0 || p+int64(n) <= maxTranscribing {
			c.backlog.pending.Add(int64(n))
			return true
		}
		select {
		case <-c.backlog.freed:
		case <-c.ctx.Done():
			return false
		}
	}
}

// transcribed gives back n samples awaitTranscribing counted.
func (c *conversation) transcribed(n int) {
	c.backlog.pending.Add(-int64(n))
	select {
	case c.backlog.freed <- struct{}{}:
	default:
	}
}
