package wire

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strings"
)

// input_video_buffer.append is voiced's own extension (issue 27): OpenAI's realtime protocol
// carries no picture, and a mind that sees needs one. One event is one still frame from the
// user's camera or screen, a PNG or JPEG in base64, in both dialects and on both transports:
//
//	{"type":"input_video_buffer.append","event_id":"…","image":"<base64 PNG/JPEG>"}
//
// image may also be a data URI (data:image/jpeg;base64,…), as a canvas's toDataURL writes it;
// the bytes are sniffed, not the URI's type believed. The session keeps the newest frames and
// shows them to the mind with the next user turn; nothing is sent back on success.
const TypeInputVideoBufferAppend = "input_video_buffer.append"

// Codes of the refusals of a frame.
const (
	// CodeVideoFrameTooLarge: the frame is over the server's bound (--max-video-frame-bytes).
	CodeVideoFrameTooLarge = "video_frame_too_large"
	// CodeVideoFrameNotImage: the frame's bytes are not a PNG or a JPEG (or not base64).
	CodeVideoFrameNotImage = "video_frame_not_image"
	// CodeVideoFrameRate: frames came faster than the server takes them (--video-frame-rate).
	CodeVideoFrameRate = "video_frame_rate_exceeded"
)

// InputVideoBufferAppend is input_video_buffer.append. Image is the frame's base64 as sent (a
// data URI's prefix cut); Frame decodes it within a bound. Decoding waits for the session, which
// knows its bound and its rate, so a frame refused by rate is never decoded.
type InputVideoBufferAppend struct {
	ClientHeader
	Image string
}

// Frame decodes the frame: at most maxBytes of PNG or JPEG. It refuses by length before it
// decodes, and names what it refuses (CodeVideoFrameTooLarge, CodeVideoFrameNotImage). mime is
// "image/png" or "image/jpeg", from the bytes.
func (e *InputVideoBufferAppend) Frame(maxBytes int) (data []byte, mime string, err *Error) {
	if n := base64.StdEncoding.DecodedLen(len(e.Image)); n > maxBytes+2 { // +2: DecodedLen counts padding
		return nil, "", e.tooLarge(maxBytes, n)
	}
	data, derr := decodeBase64(e.Image)
	if derr != nil {
		return nil, "", invalidRequest(CodeVideoFrameNotImage, "image", e.EventID,
			"Invalid 'image': expected a base64 PNG or JPEG image (%v).", derr)
	}
	if len(data) > maxBytes {
		return nil, "", e.tooLarge(maxBytes, len(data))
	}
	mime = SniffImage(data)
	if mime == "" {
		return nil, "", invalidRequest(CodeVideoFrameNotImage, "image", e.EventID,
			"Invalid 'image': expected a PNG or JPEG image, but its bytes are neither.")
	}
	return data, mime, nil
}

func (e *InputVideoBufferAppend) tooLarge(maxBytes, got int) *Error {
	return invalidRequest(CodeVideoFrameTooLarge, "image", e.EventID,
		"Invalid 'image': the frame is %d bytes; this server takes frames of at most %d bytes (send a smaller or more compressed frame).", got, maxBytes)
}

// SniffImage names the image format of b by its magic: "image/png", "image/jpeg", or "".
func SniffImage(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(b, []byte{0xff, 0xd8, 0xff}):
		return "image/jpeg"
	}
	return ""
}

// ErrVideoFrameRate refuses a frame sent faster than perSecond frames a second, averaged.
func ErrVideoFrameRate(perSecond float64, eventID string) *Error {
	return &Error{Type: TypeInvalidRequest, Code: CodeVideoFrameRate, EventID: eventID,
		Message: fmt.Sprintf("Frames came faster than this server takes them (%g a second, averaged): this frame was dropped; the newest frames kept are still shown with the next turn.", perSecond)}
}

// decodeVideoAppend reads input_video_buffer.append's image (base64, or a data URI of it).
func decodeVideoAppend(h ClientHeader, image *string) (*InputVideoBufferAppend, *Error) {
	if image == nil {
		return nil, ErrMissingParameter("image", h.EventID)
	}
	s := *image
	if strings.HasPrefix(s, "data:") {
		head, data, ok := strings.Cut(s, ",")
		if !ok || !strings.HasSuffix(head, ";base64") {
			return nil, invalidRequest(CodeVideoFrameNotImage, "image", h.EventID,
				"Invalid 'image': expected base64 or a base64 data URI (data:image/jpeg;base64,…).")
		}
		s = data
	}
	return &InputVideoBufferAppend{ClientHeader: h, Image: s}, nil
}
