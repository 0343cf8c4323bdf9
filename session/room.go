package session

import (
	"fmt"
	"sync"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/audio/aec"
	"github.com/voiced/voiced/wire"
)

// room is the conversation's echo canceller and noise suppressor (audio/aec, issue 22): it
// cleans the input audio at 16 kHz after its decode and before anything hears it (the turn
// detector, the squelch, the buffer Whisper reads), with the reply audio the conversation sent
// as the echo's reference. The input goroutine makes it (configureRoom) and cleans through it;
// the replies' writers queue what they sent (far); its own lock guards the filter and the
// reference's resampler. The raw bytes a committed item keeps for retrieve stay the client's.
type room struct {
	mu     sync.Mutex
	f      *aec.Filter      // nil: the audio passes untouched
	far24  *audio.Resampler // the reply's 24 kHz → 16 kHz, for the reference
	cfg    aec.Config       // what f was made with
	closed bool
}

// echoDefault is voiced.echo_cancellation's default (with Config.EchoCancel): on where the
// client has no echo canceller of its own (a WebSocket client, G.711 phone bridges among them),
// off for a WebRTC call (the browser's getUserMedia cancels its own echo) unless asked.
func echoDefault(on bool, m Media) bool { return on && !m.TrackInput }

// roomConfig is the filter a session asks for: the canceller with voiced.echo_cancellation (or
// the transport's default), noise suppression with noise_reduction (near_field: −15 dB,
// far_field: −25 dB; null: none).
func roomConfig(on bool, m Media, s wire.Session) aec.Config {
	var cfg aec.Config
	cfg.Echo = echoDefault(on, m)
	if s.EchoCancellation != nil {
		cfg.Echo = *s.EchoCancellation
	}
	switch s.NoiseReduction {
	case "near_field":
		cfg.SuppressDB = aec.SuppressNearField
	case "far_field":
		cfg.SuppressDB = aec.SuppressFarField
	}
	return cfg
}

// configure makes the filter cfg asks for, unless it already runs (a change of echo or noise
// starts a new one: the canceller learns the room again, within a second or two).
func (r *room) configure(cfg aec.Config) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || (r.f != nil && r.cfg == cfg) || (r.f == nil && cfg == (aec.Config{})) {
		return nil
	}
	if r.f != nil {
		r.f.Close()
		r.f = nil
	}
	r.cfg = cfg
	if cfg == (aec.Config{}) {
		return nil
	}
	f, err := aec.New(cfg)
	if err != nil {
		return fmt.Errorf("echo canceller: %w", err)
	}
	if r.far24 == nil {
		if r.far24, err = audio.NewResampler(speakRate, hearRate); err != nil {
			f.Close()
			return fmt.Errorf("echo canceller: %w", err)
		}
	}
	r.far24.Reset()
	r.f = f
	return nil
}

// clean runs one step of input audio through the filter (the same number of samples, one
// frame late: aec.Latency); without a filter it returns pcm.
func (r *room) clean(pcm []float32) []float32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return pcm
	}
	return r.f.Process(pcm)
}

// far queues reply audio (24 kHz) the client is about to play as the echo's reference. Any
// goroutine (the replies' writers).
func (r *room) far(pcm []int16) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil || !r.cfg.Echo {
		return
	}
	r.f.Far(r.far24.Process(audio.Int16ToFloat32(pcm)))
}

// dropFar forgets the reference the client will not play (a barge-in, a clear, a truncate).
func (r *room) dropFar() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f != nil {
		r.f.DropFar()
		r.far24.Reset()
	}
}

// close frees the filter; once every goroutine that uses it has returned.
func (r *room) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	if r.f != nil {
		r.f.Close()
		r.f = nil
	}
}

// configureRoom (re)makes the room's filter for the session's settings (input goroutine).
func (c *conversation) configureRoom() error {
	return c.room.configure(roomConfig(c.srv.cfg.EchoCancel, c.media, c.in.sess))
}

// cleanInput runs the step of input audio just buffered (pcm, the buffer's tail) through the
// room's filter and writes the cleaned samples back into the buffer, so the detector, the
// squelch, partials and the committed turn all hear the same cleaned audio.
func (c *conversation) cleanInput(pcm []float32) []float32 {
	out := c.room.clean(pcm)
	if len(out) > 0 && len(out) == len(pcm) && &out[0] != &pcm[0] {
		buf := c.in.input.pcm
		copy(buf[len(buf)-len(out):], out)
	}
	return out
}
