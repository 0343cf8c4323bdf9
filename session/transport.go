package session

import (
	"context"
	"errors"

	"github.com/voiced/voiced/wire"
)

// A conversation is an engine that a transport carries. The engine (conversation.go) takes client
// events and input audio and emits server events and output audio; the transport moves them to
// and from the client. The WebSocket (websocket.go) is one transport: frames ↔ events, audio in
// input_audio_buffer.append and response.output_audio.delta. A WebRTC call is another: the data
// channel carries the same JSON events, the audio travels on tracks (Media).

// Transport carries one conversation. The engine calls Receive from its input goroutine only,
// Send and Close from its writer goroutine only (so each side of the transport has one owner);
// Media is read once, before either starts.
type Transport interface {
	// Receive returns the client's next input: a client event's JSON, a transport-level refusal
	// to report, or (with Media.TrackInput) a run of input audio. An error means the client is
	// gone (or ctx ended): the conversation ends.
	Receive(ctx context.Context) (Inbound, error)
	// Send delivers one encoded server event (UTF-8 JSON), in the engine's order. ctx bounds it: a
	// client that stopped reading makes it fail, and the conversation ends.
	Send(ctx context.Context, event []byte) error
	// Close ends the transport, after the last event (an error event naming why, when there is
	// one) was sent; reason is a few words for the transport's own close (a WebSocket close
	// frame). The writer calls it when the engine ends the conversation, and the engine calls
	// Close(EndNormal, "") once every goroutine has returned (a second Close must do nothing).
	Close(end End, reason string)
	// Media says how audio travels on this transport.
	Media() Media
}

// Inbound is one thing from the client: exactly one field is set.
type Inbound struct {
	// Event is one client event's JSON (a WebSocket text frame, a data-channel message).
	Event []byte
	// Refused is a client message the transport could not take (over the size limit, a binary
	// frame): sent to the client as an error event; the conversation goes on.
	Refused *wire.Error
	// Audio is input audio from a track (Media.TrackInput): mono samples at TrackRate (16 kHz,
	// the rate the engine hears at). It joins the input pipeline after the step that decodes an
	// input_audio_buffer.append's bytes: whatever the session's input format, the recogniser
	// hears these samples as they are.
	Audio []float32
}

// TrackRate is the rate of Inbound.Audio: the rate turn detection, the squelch and the
// recogniser hear at.
const TrackRate = hearRate

// Media says where audio travels.
type Media struct {
	// TrackInput: input audio arrives as Inbound.Audio; input_audio_buffer.append is refused
	// (errAppendOverTrack).
	TrackInput bool
	// Player, when set, plays reply audio in real time: no audio delta events are sent, the
	// engine hands the audio to the player, cuts what was not yet played on barge-in and
	// output_audio_buffer.clear (sending output_audio_buffer.cleared), and truncates the item to
	// what was played. nil: reply audio travels in response.output_audio.delta events and the
	// client truncates (conversation.item.truncate), as on the WebSocket.
	Player Player
}

// Player plays reply audio (24 kHz mono PCM16) paced in real time (a WebRTC track). Its positions
// count samples on one timeline: the n-th sample Play queued is the n-th sample played, once
// Clear has dropped what was queued and not played (Clear's return value is then where the next
// queued sample will play). The player reports output_audio_buffer.started / .stopped itself,
// through the emit its transport was given (EventSource.Attach), as it starts and drains.
type Player interface {
	// Play queues pcm of response responseID. It blocks while the player's buffer is full (the
	// reply is paced by it) and returns ctx's error if ctx ends first.
	Play(ctx context.Context, responseID string, pcm []int16) error
	// Clear drops everything queued and not yet played and returns Played after it.
	Clear() int64
	// Played is how many samples have been played since the player began.
	Played() int64
}

// End is why the engine ended a conversation; a transport maps it to its own close (a WebSocket
// close status, a hang-up).
type End int

const (
	// EndNormal: the client left, or the conversation ended without a reason to give.
	EndNormal End = iota
	// EndGoingAway: idle, the session limit, the server draining.
	EndGoingAway
	// EndPolicy: the principal's quota is used up, or the client kept sending over its event rate.
	EndPolicy
	// EndServerError: the conversation could not start.
	EndServerError
)

// ErrClientClosed is what Receive wraps when the client ended the conversation cleanly (a close
// frame, a hang-up): the engine does not log it.
var ErrClientClosed = errors.New("the client closed the conversation")

// errAppendOverTrack: input audio arrives on a track on this transport.
var errAppendOverTrack = errors.New("input audio arrives on the audio track")

// codeAppendOverTrack is the error code of an input_audio_buffer.append over a track transport.
const codeAppendOverTrack = "input_audio_on_track"

// EventSource is a transport that sends server events of its own (a player's
// output_audio_buffer.started / .stopped). The engine calls Attach once, before the first
// Receive; emit is safe from any goroutine and queues the event behind those already queued.
type EventSource interface {
	Attach(emit func(wire.ServerEvent))
}
