package rtc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/pion/datachannel"
	"github.com/pion/webrtc/v4"
	"github.com/pion/webrtc/v4/pkg/media"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/audio/opus"
	"github.com/voiced/voiced/door"
)

// OutputRate is the rate of reply audio given to Play (Kokoro's 24 kHz).
const OutputRate = 24000

const (
	frame     = 20 * time.Millisecond
	outFrame  = OutputRate / 50 // 480 samples of reply audio per 20 ms
	eventsCap = 256
	// statsEvery: how often a call adds pion's RTP stats to the metrics (and once at its end).
	statsEvery = 5 * time.Second
)

// The oai-events data channel's bounds.
const (
	// MaxEventMessage is the largest data-channel message a call takes, advertised in the
	// answer (a=max-message-size; a browser's send() refuses a larger one itself). It is
	// libwebrtc's own figure (Chrome advertises 256 KiB), far above any realtime client event
	// (input_audio_buffer.append is refused on a call: the audio is on the track). A larger
	// message from a peer that ignores the advertisement is read through (sctpReceiveBuffer
	// bounds it), dropped and refused with an error event; the call goes on.
	MaxEventMessage = 256 << 10
	// sctpReceiveBuffer is the SCTP association's receive window (pion's default, stated): all
	// the data-channel bytes a peer can have in flight on a call. A message must fit in it to
	// arrive at all, so it is above MaxEventMessage.
	sctpReceiveBuffer = 1 << 20
	// firstEventBuffer is the reader's first buffer; it doubles while a message needs more.
	firstEventBuffer = 4 << 10
	// maxReadThrough bounds the buffer a message over MaxEventMessage is read through with: the
	// receive window and the chunks SCTP takes past it to fill a gap. No complete message can
	// be larger; the reader ends the call if one were.
	maxReadThrough = 2 * sctpReceiveBuffer
)

// Handlers are a call's owner callbacks; any may be nil.
type Handlers struct {
	// InputRate is the rate Audio delivers at (default 16000).
	InputRate int
	// Audio gets the decoded mic audio, from the call's one reader goroutine.
	Audio func(pcm []float32)
	// Event gets each oai-events data-channel message (the call's data-channel reader); msg is
	// the caller's to keep.
	Event func(msg []byte)
	// TooLarge reports a data-channel message over MaxEventMessage, of size bytes, that was
	// dropped (the data-channel reader).
	TooLarge func(size int)
	// Output reports the output buffer started (true) or stopped (false), from the pacer.
	Output func(started bool)
	// Closed is called once when the call ends, with why (ErrCallClosed, ErrICETimeout, ...).
	Closed func(err error)
	// MaxBuffered bounds reply audio not yet played, in samples at 24 kHz (default 2 s):
	// Play blocks beyond it.
	MaxBuffered int
}

// Call is one answered peer connection.
type Call struct {
	cfg   Config
	m     *metrics
	h     Handlers
	pc    *webrtc.PeerConnection
	track *webrtc.TrackLocalStaticSample
	// peerMax is the largest data-channel message the peer takes (its offer's
	// a=max-message-size, peerMaxMessage); set before the call runs, read-only after.
	peerMax int

	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{}
	err    error

	connected chan struct{}
	failed    chan struct{}
	// iceDown: ICE is disconnected (nothing heard from the peer for DisconnectedTimeout), failed
	// or closed; the pacer plays nothing meanwhile (pace).
	iceDown  atomic.Bool
	once     sync.Once // connected
	failOnce sync.Once

	mu      sync.Mutex
	closing bool
	wg      sync.WaitGroup // track reader, data-channel reader, writer, pacer
	reading bool           // the track reader started: a second audio track is not read
	dc      *webrtc.DataChannel
	dcOpen  chan struct{}
	dcOnce  sync.Once
	events  *door.Writer // the data channel's writer (write), started once the channel opens
	pending []float32    // reply audio not yet played (24 kHz)
	played  int64
	cut     bool          // set by Clear, taken by the pacer at its next tick: a playing reply was cut
	paused  bool          // set by Pause: the pacer takes nothing from pending until Resume
	hush    bool          // set by Pause, taken by the pacer: the paused reply gets the silence tail
	space   chan struct{} // signalled when pending shrinks
}

func newCall(cfg Config, m *metrics, pc *webrtc.PeerConnection, h Handlers, peerMax int) (*Call, error) {
	if h.InputRate == 0 {
		h.InputRate = 16000
	}
	if h.MaxBuffered <= 0 {
		h.MaxBuffered = 2 * OutputRate
	}
	track, err := webrtc.NewTrackLocalStaticSample(opusCapability, "audio", "voiced")
	if err != nil {
		return nil, err
	}
	if _, err := pc.AddTrack(track); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	c := &Call{
		cfg: cfg, m: m, h: h, pc: pc, track: track, ctx: ctx, cancel: cancel, peerMax: peerMax,
		done: make(chan struct{}), connected: make(chan struct{}), failed: make(chan struct{}),
		dcOpen: make(chan struct{}), space: make(chan struct{}, 1),
	}
	c.events = door.NewWriter(door.WriterConfig{Queue: eventsCap})
	pc.OnICEConnectionStateChange(func(s webrtc.ICEConnectionState) {
		switch s {
		case webrtc.ICEConnectionStateConnected, webrtc.ICEConnectionStateCompleted:
			c.iceDown.Store(false)
			c.once.Do(func() { close(c.connected) })
		case webrtc.ICEConnectionStateDisconnected:
			c.iceDown.Store(true)
		case webrtc.ICEConnectionStateFailed, webrtc.ICEConnectionStateClosed:
			c.iceDown.Store(true)
			c.failOnce.Do(func() { close(c.failed) })
		}
	})
	pc.OnTrack(func(t *webrtc.TrackRemote, _ *webrtc.RTPReceiver) {
		if t.Kind() != webrtc.RTPCodecTypeAudio || !c.startReader() {
			return // one mic: a second audio track is not read (its packets are dropped by pion)
		}
		go c.read(t)
	})
	pc.OnDataChannel(func(dc *webrtc.DataChannel) {
		c.mu.Lock()
		events := dc.Label() == "oai-events" && c.dc == nil
		if events {
			c.dc = dc
		}
		c.mu.Unlock()
		// Channels are detached (Endpoint): nothing reads one but the call, so any other channel
		// a peer opens is closed at once and holds no reader, buffer or queued bytes.
		dc.OnOpen(func() {
			raw, err := dc.Detach()
			if err != nil {
				return
			}
			if !events || !c.start() {
				raw.Close()
				return
			}
			c.dcOnce.Do(func() { close(c.dcOpen) })
			go c.readEvents(raw)
		})
	})
	c.wg.Add(2)
	go c.write()
	go c.pace()
	go c.supervise()
	return c, nil
}

// start registers a goroutine with the call unless it is closing.
func (c *Call) start() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return false
	}
	c.wg.Add(1)
	return true
}

// startReader registers the one track reader (false: the call is closing or has one).
func (c *Call) startReader() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing || c.reading {
		return false
	}
	c.reading = true
	c.wg.Add(1)
	return true
}

// readEvents is the oai-events channel's one reader: each message goes to Handlers.Event. A
// message over MaxEventMessage is read through (SCTP's receive window bounds what can arrive:
// maxReadThrough), dropped and reported to Handlers.TooLarge; the channel goes on. When the
// channel ends, so does the call (pc.Close ends the read when the call ends first).
func (c *Call) readEvents(raw datachannel.ReadWriteCloser) {
	defer c.wg.Done()
	defer raw.Close()
	buf := make([]byte, firstEventBuffer)
	for {
		n, _, err := raw.ReadDataChannel(buf)
		if errors.Is(err, io.ErrShortBuffer) {
			// The message stays queued until a buffer holds it; pion does not say its size.
			if len(buf) >= maxReadThrough {
				c.cancel(fmt.Errorf("%w: a data-channel message over %d bytes", ErrICEFailed, maxReadThrough))
				return
			}
			buf = make([]byte, min(2*len(buf), maxReadThrough))
			continue
		}
		if err != nil {
			// The peer closed the channel or the association (a PeerConnection closed without
			// a hang-up): the call is over now, not when ICE times out.
			c.cancel(fmt.Errorf("%w: data channel: %w", ErrICEFailed, err))
			return
		}
		if n > MaxEventMessage {
			c.m.tooLarge.WithLabelValues("in").Inc()
			if c.h.TooLarge != nil {
				c.h.TooLarge(n)
			}
			buf = make([]byte, MaxEventMessage) // the read-through buffer goes
			continue
		}
		if c.h.Event != nil {
			c.h.Event(append([]byte(nil), buf[:n]...))
		}
	}
}

func (c *Call) negotiate(ctx context.Context, offer string) (string, error) {
	if err := c.pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: offer}); err != nil {
		return "", fmt.Errorf("%w: %w", ErrBadOffer, err)
	}
	answer, err := c.pc.CreateAnswer(nil)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrBadOffer, err)
	}
	gathered := webrtc.GatheringCompletePromise(c.pc)
	if err := c.pc.SetLocalDescription(answer); err != nil {
		return "", err
	}
	select {
	case <-gathered:
	case <-ctx.Done():
		return "", fmt.Errorf("%w: %w", ErrGathering, ctx.Err())
	}
	return c.pc.LocalDescription().SDP, nil
}

// supervise ends the call: on Close, on ICE failure, or when ICE never connects; it closes
// the peer connection, waits for every goroutine, then reports Closed.
func (c *Call) supervise() {
	timer := time.NewTimer(c.cfg.ConnectTimeout)
	defer timer.Stop()
	var why error
	select {
	case <-c.connected:
		seen := map[webrtc.SSRC]inboundSeen{}
		stats := time.NewTicker(statsEvery)
		defer stats.Stop()
	connected:
		for {
			select {
			case <-stats.C:
				c.sampleStats(seen)
				continue
			case <-c.failed:
				why = ErrICEFailed
			case <-c.ctx.Done():
			}
			break connected
		}
		if why == nil && !errors.Is(context.Cause(c.ctx), ErrICEFailed) {
			// The last sample, unless ICE failed or the peer closed the association (the data
			// channel ended the call): pion then closes the pc itself, and its GetStats races
			// with that close (seen by -race in TestCallPeerVanishes and
			// TestCallPlayedStopsWithThePeer).
			c.sampleStats(seen)
		}
	case <-c.failed:
		why = ErrICEFailed
	case <-timer.C:
		why = ErrICETimeout
	case <-c.ctx.Done():
	}
	if why != nil {
		c.cancel(why)
	}
	c.mu.Lock()
	c.closing = true
	c.mu.Unlock()
	c.pc.Close() // ends the reader's ReadRTP
	c.wg.Wait()
	c.err = context.Cause(c.ctx)
	if c.h.Closed != nil {
		c.h.Closed(c.err)
	}
	close(c.done)
}

// Close ends the call and waits for all its goroutines; it returns why the call ended
// (ErrCallClosed when Close ended it).
func (c *Call) Close() error {
	c.cancel(ErrCallClosed)
	<-c.done
	return c.err
}

// Done is closed when the call has ended and its goroutines are gone.
func (c *Call) Done() <-chan struct{} { return c.done }

// read is the one reader goroutine: RTP → back in sequence order (inbound) → Opus decode, a lost
// frame recovered from the next packet's in-band FEC when it is there, else concealed (PLC) →
// resample.
func (c *Call) read(t *webrtc.TrackRemote) {
	defer c.wg.Done()
	dec, err := opus.NewDecoder()
	if err != nil {
		c.cancel(err)
		return
	}
	defer dec.Close()
	rs, err := audio.NewResampler(opus.SampleRate, c.h.InputRate)
	if err != nil {
		c.cancel(err)
		return
	}
	in := newInbound()
	excess := 0         // in.excess already counted and logged
	var armed time.Time // the read deadline set on t (zero: none)
	for {
		// Packets held behind a gap are released at their deadline even if the sender went
		// quiet: the read returns a timeout then.
		dl, held := in.deadline()
		if idle, ok := in.idle(); ok && (!held || idle.Before(dl)) {
			dl = idle // a sender that sends nothing is filled in with silence (jitter.go, idleAfter)
		}
		if !dl.Equal(armed) {
			if err := t.SetReadDeadline(dl); err != nil {
				return
			}
			armed = dl
		}
		p, _, err := t.ReadRTP()
		var steps []frameStep
		switch {
		case err == nil:
			steps = in.push(p, time.Now())
		case isTimeout(err):
			now := time.Now()
			steps = append(in.expire(now), in.fill(now)...)
		default:
			return
		}
		if in.excess > excess {
			if excess == 0 {
				c.cfg.Log.Warn("webrtc peer sends mic audio faster than real time; the excess is dropped undecoded",
					"burst", maxBurst, "metric", "voiced_webrtc_inbound_excess_frames_total")
			}
			c.m.excess.Add(float64(in.excess - excess))
			excess = in.excess
		}
		c.decode(dec, rs, steps)
	}
}

// decode turns the reader's steps into PCM for Handlers.Audio.
func (c *Call) decode(dec *opus.Decoder, rs *audio.Resampler, steps []frameStep) {
	for _, f := range steps {
		var pcm []int16
		var err error
		switch {
		case f.silence > 0:
			c.m.silence(f.silence)
			c.silence(rs, f.silence)
			continue
		case f.lost && f.fec != nil:
			c.m.concealed.WithLabelValues("fec").Inc()
			pcm, err = dec.DecodeFEC(f.fec)
		case f.lost:
			c.m.concealed.WithLabelValues("plc").Inc()
			pcm, err = dec.Decode(nil)
		case len(f.payload) == 0:
			continue
		default:
			if pcm, err = dec.Decode(f.payload); err != nil {
				c.m.concealed.WithLabelValues("plc").Inc()
				pcm, err = dec.Decode(nil) // a bad packet is concealed as a lost one
			}
		}
		if err != nil {
			continue
		}
		c.deliver(rs, pcm)
	}
}

// silence hands n samples (48 kHz) of silence on, a frame at a time.
func (c *Call) silence(rs *audio.Resampler, n int) {
	quiet := make([]int16, min(n, opus.FrameSamples))
	for ; n > 0; n -= len(quiet) {
		c.deliver(rs, quiet[:min(n, len(quiet))])
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func (c *Call) deliver(rs *audio.Resampler, pcm []int16) {
	out := rs.Process(audio.Int16ToFloat32(pcm))
	if len(out) > 0 && c.h.Audio != nil {
		c.h.Audio(out)
	}
}

// PeerMaxMessage is the largest data-channel message the peer takes (its offer's
// a=max-message-size; 65535 when it names none): Send must not be given a larger one, or the
// data channel's send fails and the call ends.
func (c *Call) PeerMaxMessage() int { return c.peerMax }

// Send queues one event for the data channel; the queue is bounded (ErrEventQueueFull).
func (c *Call) Send(event []byte) error {
	if err := context.Cause(c.ctx); err != nil {
		return err
	}
	if !c.events.TrySend(door.Message{Type: websocket.MessageText, Data: event}) {
		return ErrEventQueueFull
	}
	return nil
}

// write is the data channel's one writer, once the channel is open.
func (c *Call) write() {
	defer c.wg.Done()
	select {
	case <-c.dcOpen:
	case <-c.ctx.Done():
		return
	}
	c.mu.Lock()
	dc := c.dc
	c.mu.Unlock()
	if err := c.events.Run(c.ctx, dataChannel{dc}); err != nil && c.ctx.Err() == nil {
		c.cancel(fmt.Errorf("%w: data channel: %w", ErrICEFailed, err))
	}
}

// dataChannel is the call's data channel as its door.Writer writes it: text messages, as OpenAI
// sends them (a browser SDK reads event.data as a string: the Agents SDK's
// JSON.parse(event.data.toString()) drops an ArrayBuffer).
type dataChannel struct{ dc *webrtc.DataChannel }

func (d dataChannel) Write(_ context.Context, _ websocket.MessageType, event []byte) error {
	return d.dc.SendText(string(event))
}

// Close does nothing: the call's peer connection ends the channel.
func (dataChannel) Close(websocket.StatusCode, string) error { return nil }

// Play queues reply audio (24 kHz); it blocks while MaxBuffered samples wait (backpressure)
// until there is room, ctx ends or the call ends.
func (c *Call) Play(ctx context.Context, pcm []float32) error {
	for len(pcm) > 0 {
		c.mu.Lock()
		room := c.h.MaxBuffered - len(c.pending)
		if room > 0 {
			n := min(room, len(pcm))
			c.pending = append(c.pending, pcm[:n]...)
			pcm = pcm[n:]
			c.mu.Unlock()
			continue
		}
		c.mu.Unlock()
		select {
		case <-c.space:
		case <-ctx.Done():
			return ctx.Err()
		case <-c.ctx.Done():
			return context.Cause(c.ctx)
		}
	}
	return nil
}

// Clear drops the reply audio not yet played and returns Played. A reply cut while it played is
// followed on the track by CutTailPackets of silence (see pace).
func (c *Call) Clear() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pending = c.pending[:0]
	c.cut = true
	c.signalSpace()
	return c.played
}

// Pause stops playing at the pacer's next tick (within 20 ms) and keeps what is queued and the
// position: Played stands still and Play blocks once the queue is full, until Resume. A paused
// reply is followed on the track by the silence tail (CutTailPackets), as a cut one is, so a
// receiver does not conceal the gap as ghost speech; no output_audio_buffer event is sent (the
// buffer is held, not drained). Clear while paused drops the queue as usual.
func (c *Call) Pause() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.paused {
		c.paused, c.hush = true, true
	}
}

// Resume plays on from where Pause stopped.
func (c *Call) Resume() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.paused, c.hush = false, false
}

// Paused says whether the call holds its reply audio (Pause).
func (c *Call) Paused() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.paused
}

// Played is how many samples (24 kHz) of the audio given to Play went out, in total: written to
// the track while ICE was connected (the session meters spoken seconds by it).
func (c *Call) Played() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.played
}

// Buffered is how many samples wait to be played.
func (c *Call) Buffered() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}

func (c *Call) signalSpace() {
	select {
	case c.space <- struct{}{}:
	default:
	}
}

// CutTailPackets is how many 20 ms packets of Opus-encoded digital silence follow a reply that
// Clear cut (barge-in, output_audio_buffer.clear), on the same RTP timeline.
// A receiver that stops getting packets conceals the gap by stretching the last ones (Chrome's
// NetEq), so a reply cut mid-word would ring on as "ghost" speech. 200 ms of decoded silence is
// meant to outlast a browser's jitter buffer on a good path and leave the decoder on silence, so
// what is concealed after the tail is quiet (the page's Chromium figure has not shown the gain
// apart from its noise yet: LLM.md). The tail also flushes the encoder's lookahead (6.5 ms of
// the last audio played). It is not reply audio: Played does not count it, it sends no
// output_audio_buffer event, and a new reply's audio replaces it at the next tick. A reply that
// ends by itself gets none: Kokoro's audio ends on its own trailing quiet, which is what the
// receiver then conceals.
const CutTailPackets = 10

// pace is the one pacer: every 20 ms it takes 480 samples of reply audio, resamples them to
// 48 kHz, encodes one Opus packet and writes it to the track; after a cut it sends the silence
// tail (CutTailPackets) instead. While ICE is disconnected it pauses: Played counts only audio
// sent while the peer could hear it.
func (c *Call) pace() {
	defer c.wg.Done()
	enc, err := opus.NewEncoder(32000)
	if err != nil {
		c.cancel(err)
		return
	}
	defer enc.Close()
	up, _ := audio.NewResampler(OutputRate, opus.SampleRate)
	var acc []float32
	started := false
	tail := 0 // silence packets still to send after a cut
	quiet := make([]int16, opus.FrameSamples)
	tick := time.NewTicker(frame)
	defer tick.Stop()
	chunk := make([]float32, outFrame)
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-tick.C:
		}
		if c.iceDown.Load() {
			// The peer is unreachable: nothing is played, nor counted in Played (what the
			// session meters), until ICE is back or the call ends.
			continue
		}
		c.mu.Lock()
		if c.paused {
			hush := c.hush
			c.hush = false
			c.mu.Unlock()
			if hush && started {
				tail = CutTailPackets
			}
			if tail > 0 {
				tail--
				c.writeFrame(enc, quiet)
			}
			continue
		}
		n := copy(chunk, c.pending)
		c.pending = c.pending[:copy(c.pending, c.pending[n:])]
		c.played += int64(n)
		if n > 0 {
			c.signalSpace()
		}
		cut := c.cut
		c.cut = false
		c.mu.Unlock()
		if n == 0 {
			if started {
				started = false
				up.Reset()
				acc = acc[:0]
				if cut {
					tail = CutTailPackets
				}
				if c.h.Output != nil {
					c.h.Output(false)
				}
			}
			if tail > 0 {
				tail--
				c.writeFrame(enc, quiet) // on this tick already: no 20 ms hole before the tail
			}
			continue
		}
		tail = 0 // a new reply replaces what is left of the tail
		if !started {
			started = true
			if c.h.Output != nil {
				c.h.Output(true)
			}
		}
		clear(chunk[n:])
		acc = append(acc, up.Process(chunk)...)
		for len(acc) < opus.FrameSamples {
			acc = append(acc, 0) // the resampler's delay at the start
		}
		c.writeFrame(enc, audio.Float32ToInt16(acc[:opus.FrameSamples]))
		acc = append(acc[:0], acc[opus.FrameSamples:]...)
	}
}

// writeFrame encodes one 20 ms frame (48 kHz) and writes it to the track; the track's packetizer
// advances the RTP timestamp by 960 per frame, so the timeline stays contiguous.
func (c *Call) writeFrame(enc *opus.Encoder, pcm []int16) {
	pkt, err := enc.Encode(pcm)
	if err != nil {
		return
	}
	_ = c.track.WriteSample(media.Sample{Data: pkt, Duration: frame})
}

// Err is why the call ended (nil while it runs).
func (c *Call) Err() error {
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}
