package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/coder/websocket"

	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/wire"
)

// wsTransport is the WebSocket transport: one text frame is one event; audio travels in events
// (base64 in input_audio_buffer.append and response.output_audio.delta), so its Media is empty.
// Receive is called by the engine's input goroutine, Send and Close by its writer.
type wsTransport struct {
	conn *websocket.Conn
}

func (t *wsTransport) Media() Media { return Media{} }

func (t *wsTransport) Receive(ctx context.Context) (Inbound, error) {
	// Over ReadLimit an event is read through, discarded and refused (the session stays open); the
	// connection's own limit (HardReadLimit) closes it with 1009.
	typ, data, err := door.ReadFrame(ctx, t.conn, ReadLimit, 0)
	if errors.Is(err, door.ErrFrameTooLarge) {
		return Inbound{Refused: wire.ErrInvalidValue("audio", "", "Invalid event: a client event may be at most %d MiB (an append carries at most 15 MiB of audio).", ReadLimit>>20)}, nil
	}
	if err != nil {
		if websocket.CloseStatus(err) != -1 {
			return Inbound{}, fmt.Errorf("%w: %w", ErrClientClosed, err)
		}
		return Inbound{}, err
	}
	if typ != websocket.MessageText {
		return Inbound{Refused: wire.ErrInvalidEvent("", "Binary frames are not accepted: send JSON events in text frames.")}, nil
	}
	return Inbound{Event: data}, nil
}

func (t *wsTransport) Send(ctx context.Context, event []byte) error {
	return t.conn.Write(ctx, websocket.MessageText, event)
}

func (t *wsTransport) Close(end End, reason string) {
	t.conn.Close(end.status(), reason)
}
