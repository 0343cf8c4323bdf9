package door

import (
	"context"
	"errors"
	"io"

	"github.com/coder/websocket"
)

// ErrFrameTooLarge is what ReadFrame reports for a frame over its limit that was read through and
// thrown away: the socket can go on.
var ErrFrameTooLarge = errors.New("client frame over the read limit")

// ErrFrameOverDrain is what ReadFrame reports for a frame that was still going at the drain limit:
// close the socket (1009).
var ErrFrameOverDrain = errors.New("client frame over the drain limit")

// ReadFrame reads one message of at most limit bytes. A longer one is read through and discarded
// (up to drain more bytes; drain ≤ 0: the connection's own read limit bounds it) and reported as
// ErrFrameTooLarge, so the door can refuse it by name and keep the socket; past drain it reports
// ErrFrameOverDrain. Any other error means the socket is done.
func ReadFrame(ctx context.Context, conn *websocket.Conn, limit, drain int64) (websocket.MessageType, []byte, error) {
	typ, r, err := conn.Reader(ctx)
	if err != nil {
		return 0, nil, err
	}
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return 0, nil, err
	}
	if int64(len(data)) <= limit {
		return typ, data, nil
	}
	src := r
	if drain > 0 {
		src = io.LimitReader(r, drain)
	}
	n, err := io.Copy(io.Discard, src)
	if err != nil {
		return 0, nil, err
	}
	if drain > 0 && n == drain {
		return typ, nil, ErrFrameOverDrain
	}
	return typ, nil, ErrFrameTooLarge
}
