package session

import (
	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/wire"
)

// playback is the reply audio handed to the transport's Player (Media.Player), on the player's
// timeline (see Player). Under history.mu. It follows the assistant message whose audio was
// queued last: where on the timeline its first sample plays and how much of it was queued, so
// that a cut (barge-in, output_audio_buffer.clear) truncates it exactly to the sample played.
type playback struct {
	queued    int64  // where the next sample queued will play
	gen       int    // bumped by each clear: a Play that failed across a clear does not uncount
	msg       *entry // the message being played (nil: none since the last clear)
	resp      string // its response
	start     int64  // where msg's first sample plays
	sent      int    // samples of msg queued
	piece     string // the piece being spoken, not yet in msg.spoken
	pieceSent int    // its samples queued
}

// queuePlay counts n samples of msg's piece (response resp) on the player's timeline, before
// they are handed to the player; it returns the clear generation they were counted in.
func (h *history) queuePlay(msg *entry, resp, piece string, n int) (gen int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := &h.playing
	if p.msg != msg {
		*p = playback{queued: p.queued, gen: p.gen, msg: msg, resp: resp, start: p.queued}
	}
	p.queued += int64(n)
	p.sent += n
	p.piece = piece
	p.pieceSent += n
	return p.gen
}

// unqueuePlay takes back n samples queuePlay counted in gen that the player did not take,
// unless a clear has reset the count since.
func (h *history) unqueuePlay(msg *entry, gen, n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := &h.playing
	if p.gen == gen && p.msg == msg {
		p.queued -= int64(n)
		p.sent -= n
		p.pieceSent -= n
	}
}

// playedAll: everything queued on the player was played by played (nothing to cut).
func (h *history) playedAll(played int64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.playing.queued <= played
}

// cutPlayback restarts the timeline at played (the player dropped what it had not played) and
// truncates the message being played to the sample played. It returns the response that was
// playing, whether any of its audio was cut, and the truncation to report (nil: none).
func (h *history) cutPlayback(played int64) (resp string, cutAny bool, truncated *wire.ConversationItemTruncated) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.playing
	h.playing = playback{queued: played, gen: p.gen + 1}
	cutAny = p.msg != nil && played < p.start+int64(p.sent)
	if cutAny && !p.msg.truncated && h.byID[p.msg.item.ID] == p.msg && len(p.msg.item.Content) > 0 &&
		p.msg.item.Content[0].Type == wire.OutputAudio {
		spoken := p.msg.spoken
		if p.piece != "" {
			spoken = append(spoken[:len(spoken):len(spoken)], spokenPiece{text: p.piece, samples: p.pieceSent})
		}
		keep := int(min(max(played-p.start, 0), int64(p.sent)))
		p.msg.cut(0, spoken, keep)
		truncated = &wire.ConversationItemTruncated{ItemID: p.msg.item.ID, AudioEndMs: keep * 1000 / speakRate}
	}
	return p.resp, cutAny, truncated
}

// play queues one delta's audio (24 kHz) on the player, after counting it on the timeline; the
// reply's audio is paced by the player (Play blocks while its buffer is full).
func (run *replyRun) play(piece string, pcm []int16) error {
	p := run.p
	n := len(pcm)
	gen := p.hist.queuePlay(run.msg, run.r.id, piece, n)
	if !run.r.outOfBand {
		p.hist.keepAudio(run.msg, wire.PCM16, audio.Int16ToBytes(pcm))
	}
	p.answered()
	err := p.player.Play(run.ctx, run.r.id, pcm)
	if err != nil {
		p.hist.unqueuePlay(run.msg, gen, n) // not queued
	}
	return err
}

// clearPlayback cuts the reply audio not yet played (a barge-in, output_audio_buffer.clear): the
// player drops it, the message it belonged to is truncated to the sample played, and
// output_audio_buffer.cleared is sent when anything was cut (always when the client asked).
// Without a player it does nothing: over a WebSocket the client holds the unplayed audio and
// truncates with conversation.item.truncate.
func (c *conversation) clearPlayback(asked bool) {
	pl := c.media.Player
	if pl == nil {
		return
	}
	if !asked && c.hist.playedAll(pl.Played()) {
		return
	}
	resp, cutAny, truncated := c.hist.cutPlayback(pl.Clear())
	if cutAny || asked {
		c.send(wire.OutputAudioBufferCleared{ResponseID: resp})
	}
	if truncated != nil {
		// The server cut the item, as a client's conversation.item.truncate would: say where, as
		// the answer to one would (clients retrieve the item on it, e.g. the Agents SDK).
		c.send(*truncated)
	}
}
