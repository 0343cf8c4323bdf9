package session

// Pauser is a Player that can hold what it has queued (a WebRTC track): Pause stops playing at
// once and keeps the position (Played stands still, the queue is kept, Play blocks once it is
// full); Resume plays on from there. While speech heard during a reply is judged
// (voiced.interruption) the engine pauses such a player, so the ≤ 2 s it has queued is not heard
// over the user; a real interruption then clears it (Clear) and a false one resumes it. A Player
// that is not a Pauser plays its queue out while the reply's writer is held.
type Pauser interface {
	Pause()
	Resume()
}

// pausePlayer pauses the transport's player, when it can be.
func (c *conversation) pausePlayer() {
	if p, ok := c.media.Player.(Pauser); ok {
		p.Pause()
	}
}

// resumePlayer resumes it.
func (c *conversation) resumePlayer() {
	if p, ok := c.media.Player.(Pauser); ok {
		p.Resume()
	}
}
