package session

import (
	"encoding/base64"
	"time"

	"github.com/voiced/voiced/wire"
)

// Frames from the user's camera or screen (issue 27): input_video_buffer.append, voiced's own
// extension event. The input goroutine takes each frame within a rate and a size, keeps the
// newest few, and hands them to the next user turn (a committed utterance or a user message
// item); that turn shows them to the mind as image parts. Frames are never billed as audio and
// never sent back to the client; they are not part of the item the client sees.

// Defaults of SensesConfig's frame bounds.
const (
	// DefaultMaxFrameBytes bounds one frame, decoded: a 1080p JPEG is 200–500 KB; 2 MiB takes a
	// PNG screenshot of a large screen.
	DefaultMaxFrameBytes = 2 << 20
	// DefaultFrameRate is the frames a second a conversation may send, averaged (a bucket of
	// FramesKept): the page sends one a second; a vision model reads a turn's frame or two.
	DefaultFrameRate = 2
	// DefaultFramesKept is how many of the newest frames go with the next turn.
	DefaultFramesKept = 2
	// maxFramesKept caps FramesKept: each is up to MaxFrameBytes held in memory and sent with
	// every reply while its turn is the newest with frames.
	maxFramesKept = 8
)

// videoFrames is the frames waiting for the next user turn, owned by the input goroutine.
type videoFrames struct {
	pending []string // data URIs, oldest first, at most FramesKept
	tokens  float64  // frames that may be taken now (a bucket of FramesKept at FrameRate a second)
	last    time.Time
	started bool
}

// appendFrame takes one input_video_buffer.append: refused by name past the rate or the size,
// otherwise kept (the oldest pending frame dropped past FramesKept).
func (c *conversation) appendFrame(e *wire.InputVideoBufferAppend) {
	cfg := c.srv.cfg.Senses
	v := &c.video
	now := c.srv.cfg.Now()
	if !v.started {
		v.started, v.tokens, v.last = true, float64(cfg.FramesKept), now
	}
	if dt := now.Sub(v.last).Seconds(); dt > 0 {
		v.tokens = min(float64(cfg.FramesKept), v.tokens+dt*cfg.FrameRate)
	}
	v.last = now
	if v.tokens < 1 { // checked before the frame is decoded: a flood costs no base64
		c.send(wire.ErrVideoFrameRate(cfg.FrameRate, e.ClientEventID()))
		return
	}
	v.tokens--
	data, mime, err := e.Frame(cfg.MaxFrameBytes)
	if err != nil {
		c.send(err)
		return
	}
	uri := "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(data)
	if len(v.pending) == cfg.FramesKept {
		v.pending = append(v.pending[:0], v.pending[1:]...)
	}
	v.pending = append(v.pending, uri)
}

// takeFrames hands the pending frames to a user turn.
func (v *videoFrames) take() []string {
	f := v.pending
	v.pending = nil
	return f
}
