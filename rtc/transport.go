package rtc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/session"
	"github.com/voiced/voiced/wire"
)

// What the call's goroutines may hand the conversation ahead of it (events from the data channel
// and sideband sockets, 20 ms runs of mic audio): when either bound is reached they wait, and the
// peer is slowed by SCTP's receive window and RTP's own backpressure instead of a buffer growing.
// Nothing is dropped.
const (
	// inboundQueue bounds the inputs waiting (64 runs of mic audio are 1.3 s).
	inboundQueue = 64
	// inboundBytes bounds their bytes (event JSON, PCM16): four of the largest data-channel
	// messages (MaxEventMessage). The count alone let 64 × 256 KiB = 16 MiB wait per call. A
	// sideband message larger than this (its socket reads up to session.ReadLimit) waits until
	// nothing else does, then goes alone.
	inboundBytes = 4 * MaxEventMessage
)

// queued is one input waiting for the conversation and the bytes it holds of inboundBytes.
type queued struct {
	in    session.Inbound
	bytes int
}

// byteBudget bounds the bytes waiting in a queue: take waits for room, give hands it back.
type byteBudget struct {
	mu    sync.Mutex
	size  int
	used  int
	freed chan struct{} // closed, and replaced, whenever bytes are handed back
}

func newByteBudget(size int) *byteBudget {
	return &byteBudget{size: size, freed: make(chan struct{})}
}

// take reserves n bytes, waiting until they fit (more than the whole budget: until it is all
// free, then all of it); it returns what it reserved, or false when stop or done closed first
// (a nil channel never closes).
func (b *byteBudget) take(n int, stop, done <-chan struct{}) (int, bool) {
	n = min(n, b.size)
	for {
		b.mu.Lock()
		if b.used+n <= b.size {
			b.used += n
			b.mu.Unlock()
			return n, true
		}
		freed := b.freed
		b.mu.Unlock()
		select {
		case <-freed:
		case <-stop:
			return 0, false
		case <-done:
			return 0, false
		}
	}
}

// give hands back n bytes that take reserved.
func (b *byteBudget) give(n int) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	close(b.freed)
	b.freed = make(chan struct{})
	b.mu.Unlock()
}

// inboundSize is what an input counts against inboundBytes.
func inboundSize(in session.Inbound) int { return len(in.Event) + 4*len(in.Audio) }

// Transport carries one conversation on a call (session.Transport): the oai-events data channel
// carries the same JSON events as the socket, mic audio arrives from the track
// (Media.TrackInput) and reply audio is played on the outgoing track in real time (it is the
// session.Player), with output_audio_buffer.started / .stopped sent as playback starts and
// drains (session.EventSource). Make one with NewTransport, pass Handlers() to Endpoint.Answer,
// then Bind the call.
type Transport struct {
	bound  atomic.Pointer[Call]
	in     chan queued
	budget *byteBudget   // the bytes waiting in in (inboundBytes)
	gone   chan struct{} // closed by Close: the call's goroutines stop handing anything on
	once   sync.Once
	emit   atomic.Pointer[func(wire.ServerEvent)]
	active atomic.Pointer[string] // the response being played

	tapMu sync.Mutex
	taps  map[int]func([]byte) // sideband sockets: each sees every server event Send delivers
	tapN  int
}

var (
	_ session.Transport   = (*Transport)(nil)
	_ session.Player      = (*Transport)(nil)
	_ session.Pauser      = (*Transport)(nil)
	_ session.EventSource = (*Transport)(nil)
)

// NewTransport returns a transport waiting for its call.
func NewTransport() *Transport {
	return &Transport{in: make(chan queued, inboundQueue), budget: newByteBudget(inboundBytes), gone: make(chan struct{})}
}

// Handlers are the call's callbacks that feed this transport.
func (t *Transport) Handlers() Handlers {
	return Handlers{
		InputRate: session.TrackRate, // the engine hears the samples as they are: one resampling, Opus's 48 kHz to 16 kHz
		Audio:     func(pcm []float32) { t.hand(session.Inbound{Audio: pcm}) },
		Event:     func(msg []byte) { t.hand(session.Inbound{Event: msg}) },
		TooLarge: func(size int) {
			t.hand(session.Inbound{Refused: wire.ErrInvalidEvent("", fmt.Sprintf(
				"Invalid event: a data-channel message may be at most %d bytes (a=max-message-size in the answer); this one was %d and was dropped.",
				MaxEventMessage, size))})
		},
		Output: func(started bool) {
			emit := t.emit.Load()
			if emit == nil {
				return
			}
			id := ""
			if p := t.active.Load(); p != nil {
				id = *p
			}
			if started {
				(*emit)(wire.OutputAudioBufferStarted{ResponseID: id})
			} else {
				(*emit)(wire.OutputAudioBufferStopped{ResponseID: id})
			}
		},
	}
}

// hand passes one input on, waiting while the conversation is behind (inboundQueue inputs or
// inboundBytes wait); dropped once the transport or the call is gone.
func (t *Transport) hand(in session.Inbound) {
	var done <-chan struct{}
	if c := t.bound.Load(); c != nil {
		done = c.Done()
	}
	n, ok := t.budget.take(inboundSize(in), t.gone, done)
	if !ok {
		return
	}
	select {
	case t.in <- queued{in: in, bytes: n}:
	case <-t.gone:
		t.budget.give(n)
	case <-done:
		t.budget.give(n)
	}
}

// Bind attaches the answered call; call it before the conversation starts.
func (t *Transport) Bind(c *Call) { t.bound.Store(c) }

// Call is the call this transport carries.
func (t *Transport) Call() *Call { return t.bound.Load() }

// Receive returns the next event or run of mic audio; when the call has ended (hung up, ICE
// failed or timed out) it returns an error wrapping session.ErrClientClosed.
func (t *Transport) Receive(ctx context.Context) (session.Inbound, error) {
	var done <-chan struct{}
	if c := t.bound.Load(); c != nil {
		done = c.Done()
	}
	select {
	case q := <-t.in:
		t.budget.give(q.bytes)
		return q.in, nil
	case <-done:
		return session.Inbound{}, fmt.Errorf("%w: %w", session.ErrClientClosed, t.Call().Err())
	case <-ctx.Done():
		return session.Inbound{}, ctx.Err()
	}
}

// Send queues one server event on the data channel. Its queue is bounded: while it is full Send
// waits (the engine bounds the wait with ctx: a peer that stopped reading ends the call). An
// event larger than the peer takes (its a=max-message-size: Chrome's 256 KiB, e.g. a
// session.updated with long instructions and tools, or an item's echo) would fail the data
// channel and end the call: the peer gets an event_too_large error naming it instead, and the
// call goes on; the sideband sockets still get the event whole.
func (t *Transport) Send(ctx context.Context, event []byte) error {
	t.tapMu.Lock()
	for _, fn := range t.taps {
		fn(event)
	}
	t.tapMu.Unlock()
	if limit := t.Call().PeerMaxMessage(); len(event) > limit {
		t.Call().m.tooLarge.WithLabelValues("out").Inc()
		if event = tooLargeEvent(event, limit); event == nil || len(event) > limit {
			return nil // a peer that takes less than an error event: nothing can be said
		}
	}
	for {
		err := t.Call().Send(event)
		if !errors.Is(err, ErrEventQueueFull) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.Call().Done():
			return t.Call().Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Close hangs up (a second call does nothing).
func (t *Transport) Close(session.End, string) {
	t.once.Do(func() {
		close(t.gone)
		t.Call().Close()
	})
}

// Media: mic audio on the track, reply audio played by this transport.
func (t *Transport) Media() session.Media { return session.Media{TrackInput: true, Player: t} }

// Attach is where output_audio_buffer.started / .stopped go.
func (t *Transport) Attach(emit func(wire.ServerEvent)) { t.emit.Store(&emit) }

// Play queues a response's audio (24 kHz) on the outgoing track; it blocks while the call's
// buffer is full.
func (t *Transport) Play(ctx context.Context, responseID string, pcm []int16) error {
	t.active.Store(&responseID)
	return t.Call().Play(ctx, audio.Int16ToFloat32(pcm))
}

// Clear drops what has not been played and returns Played.
func (t *Transport) Clear() int64 { return t.Call().Clear() }

// Played is how many samples of reply audio went out on the track.
func (t *Transport) Played() int64 { return t.Call().Played() }

// Pause holds the reply audio queued (speech heard during a reply is being judged); Resume plays
// on from there.
func (t *Transport) Pause() { t.Call().Pause() }

// Resume plays on from where Pause stopped.
func (t *Transport) Resume() { t.Call().Resume() }

// MaxSidebands bounds the sideband sockets on one call. OpenAI's sideband is one server's control
// socket; a few leave room for a reconnect overlapping the old socket and a monitor. Each holds a
// writer, a queue of up to sidebandQueue events and a copy of every event the call is sent.
const MaxSidebands = 4

// Tap also hands every server event the call is sent to fn (a sideband socket's queue; fn must not
// block) until untap is called; ok is false, and fn is not added, when MaxSidebands already tap
// the call.
func (t *Transport) Tap(fn func(event []byte)) (untap func(), ok bool) {
	t.tapMu.Lock()
	defer t.tapMu.Unlock()
	if len(t.taps) >= MaxSidebands {
		return nil, false
	}
	if t.taps == nil {
		t.taps = map[int]func([]byte){}
	}
	t.tapN++
	id := t.tapN
	t.taps[id] = fn
	return func() {
		t.tapMu.Lock()
		delete(t.taps, id)
		t.tapMu.Unlock()
	}, true
}

// Inject hands the conversation a client event from elsewhere (a sideband socket), as if it came
// on the data channel; it waits while the conversation is behind.
func (t *Transport) Inject(event []byte) { t.hand(session.Inbound{Event: event}) }

// CodeEventTooLarge is the error code sent on a call's data channel in place of a server event
// larger than the peer's a=max-message-size.
const CodeEventTooLarge = "event_too_large"

// tooLargeEvent is the error event sent in place of event, which is over the peer's limit.
func tooLargeEvent(event []byte, limit int) []byte {
	var head struct {
		Type string `json:"type"`
	}
	json.Unmarshal(event, &head)
	name := head.Type
	if len(name) > 64 || name == "" {
		name = "event" // a server event's own type; bounded all the same
	}
	b, err := wire.NewEncoder(wire.GA).Encode(&wire.Error{Type: wire.TypeServer, Code: CodeEventTooLarge,
		Message: fmt.Sprintf("The server event %s (%d bytes) was not sent: it is larger than this data channel's max-message-size (%d bytes, a=max-message-size in the offer). A sideband socket on the call (GET /v1/realtime?call_id=) receives it whole.",
			name, len(event), limit)})
	if err != nil {
		return nil
	}
	return b
}
