package session

import (
	"fmt"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/mind"
	"github.com/voiced/voiced/wire"
)

// What the mind sees and hears beside the words (issue 27): the frames of a user turn
// (video.go) and, for an omni mind, the turn's own audio. Both are kept beside the turn's entry,
// not in its item: the client's conversation is OpenAI's, and these are the mind's.

// MindAudio says whether the mind hears the user's turns as audio (an omni mind).
type MindAudio string

// MindAudio settings.
const (
	// MindAudioOff (""): the mind reads the transcript only.
	MindAudioOff MindAudio = ""
	// MindAudioReplace: the newest user turn goes to the mind as audio instead of its transcript,
	// and the reply does not wait for the final decode (the client still gets its transcription
	// events).
	MindAudioReplace MindAudio = "replace"
	// MindAudioBeside: the newest user turn goes as its transcript and its audio.
	MindAudioBeside MindAudio = "beside"
)

// SensesConfig is the operator's setting of what the mind sees and hears. Zero values take the
// documented defaults.
type SensesConfig struct {
	// MindAudio: off (""), replace or beside (--mind-audio-input).
	MindAudio MindAudio
	// MindAudioRate is the rate of the audio sent to the mind: 16000 (default) or 24000
	// (--mind-audio-rate). The turn is heard at 16 kHz; 24000 resamples it once, at the commit.
	MindAudioRate int
	// MaxFrameBytes bounds one decoded frame (DefaultMaxFrameBytes; --max-video-frame-bytes).
	MaxFrameBytes int
	// FrameRate is the frames a second a conversation may send, averaged (DefaultFrameRate;
	// --video-frame-rate); FramesKept how many of the newest go with the next turn
	// (DefaultFramesKept, at most 8) and the burst the rate allows.
	FrameRate  float64
	FramesKept int
}

// fill validates the config and fills its defaults.
func (s *SensesConfig) fill() error {
	switch s.MindAudio {
	case "off":
		s.MindAudio = MindAudioOff
	case MindAudioOff, MindAudioReplace, MindAudioBeside:
	default:
		return fmt.Errorf("session: mind audio input %q: want off, replace or beside", s.MindAudio)
	}
	switch s.MindAudioRate {
	case 0:
		s.MindAudioRate = hearRate
	case 16000, 24000:
	default:
		return fmt.Errorf("session: mind audio rate %d: want 16000 or 24000", s.MindAudioRate)
	}
	if s.MaxFrameBytes == 0 {
		s.MaxFrameBytes = DefaultMaxFrameBytes
	}
	if s.FrameRate == 0 {
		s.FrameRate = DefaultFrameRate
	}
	if s.FramesKept == 0 {
		s.FramesKept = DefaultFramesKept
	}
	if s.MaxFrameBytes < 0 || s.FrameRate < 0 || s.FramesKept < 0 || s.FramesKept > maxFramesKept {
		return fmt.Errorf("session: video frames: bytes %d, rate %g, kept %d: want positive, at most %d kept",
			s.MaxFrameBytes, s.FrameRate, s.FramesKept, maxFramesKept)
	}
	return nil
}

// sensed is what a user turn's entry keeps for the mind beside its item (under history.mu).
// Only the newest turn with frames keeps its frames, and only the newest turn with audio its
// audio: memory stays FramesKept frames and one utterance a conversation.
type sensed struct {
	frames []string  // data URIs of the frames taken with the turn
	heard  []float32 // the turn's samples at SensesConfig.MindAudioRate (omni only)
}

// senseTurn gives a user turn just added (e) the pending frames and, for an omni mind, its
// audio (pcm at 16 kHz); older turns lose theirs.
func (c *conversation) senseTurn(e *entry, pcm []float32) {
	cfg := c.srv.cfg.Senses
	frames := c.video.take()
	var heard []float32
	if cfg.MindAudio != MindAudioOff && len(pcm) > 0 {
		heard = pcm
		if cfg.MindAudioRate != hearRate {
			heard = audio.Resample(pcm, hearRate, cfg.MindAudioRate)
		}
	}
	if len(frames) == 0 && len(heard) == 0 {
		return
	}
	h := &c.hist
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, o := range h.items {
		if o == e || o.sense == nil {
			continue
		}
		if len(frames) > 0 {
			o.sense.frames = nil
		}
		if len(heard) > 0 {
			o.sense.heard = nil
		}
	}
	if e.sense == nil {
		e.sense = &sensed{}
	}
	if len(frames) > 0 {
		e.sense.frames = frames
	}
	if len(heard) > 0 {
		e.sense.heard = heard
	}
}

// senses returns what the mind is shown beside each item's words (mindMessages' sense).
func (p *replyParts) senses() senseFunc {
	return p.hist.senseFunc(p.sensesCfg)
}

// senseFunc is what mindMessages adds to the message of item id, and whether that message's
// transcript is left out (replace: the audio stands for it).
type senseFunc func(id string) (extra []mind.Part, dropTranscript bool)

func (h *history) senseFunc(cfg SensesConfig) senseFunc {
	return func(id string) ([]mind.Part, bool) {
		h.mu.Lock()
		defer h.mu.Unlock()
		e := h.byID[id]
		if e == nil || e.sense == nil {
			return nil, false
		}
		var out []mind.Part
		for _, f := range e.sense.frames {
			out = append(out, mind.ImagePart(f, ""))
		}
		if len(e.sense.heard) > 0 {
			out = append(out, mind.AudioPart(e.sense.heard, cfg.MindAudioRate))
		}
		return out, len(e.sense.heard) > 0 && cfg.MindAudio == MindAudioReplace
	}
}

// transcribingUnheard is transcribing without the turns the mind hears as audio instead
// (replace): the reply waits only for the words it reads.
func (h *history) transcribingUnheard() []chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	var pending []chan struct{}
	for _, e := range h.items {
		if e.ready != nil && (e.sense == nil || len(e.sense.heard) == 0) {
			pending = append(pending, e.ready)
		}
	}
	return pending
}

// codeAudioRefused names a reply failed because the mind's server does not take audio.
const codeAudioRefused = "audio_input_not_supported"

// refusedSense is the error event of a mind that refused the conversation's images or audio (nil
// for any other failure).
func refusedSense(err error, me *mind.Error) *wire.Error {
	switch {
	case me == nil:
		return nil
	case me.Kind == mind.ErrAudioRefused:
		return &wire.Error{Type: wire.TypeInvalidRequest, Code: codeAudioRefused, Message: "The mind refused the user's audio: " + me.Message + "."}
	case me.Kind == mind.ErrImagesRefused:
		return &wire.Error{Type: wire.TypeInvalidRequest, Code: codeImagesRefused, Message: "The mind refused the conversation's images: " + me.Message + "."}
	}
	return nil
}
