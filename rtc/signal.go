package rtc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
)

// MaxSignalBody bounds a signalling body (an SDP offer is a few KiB; a session a few more).
const MaxSignalBody = 1 << 20

// ParseCallBody reads a POST /v1/realtime/calls body: application/sdp (the offer) or
// multipart/form-data with an "sdp" part and an optional "session" part (a JSON object,
// returned raw; nil when absent). The offer is returned as sent; validate it with ValidateOffer.
func ParseCallBody(contentType string, body io.Reader) (offer string, session json.RawMessage, err error) {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return "", nil, fmt.Errorf("%w (got %q)", ErrContentType, contentType)
	}
	data, err := io.ReadAll(io.LimitReader(body, MaxSignalBody+1))
	if err != nil {
		return "", nil, err
	}
	if len(data) > MaxSignalBody {
		return "", nil, ErrBodyTooLarge
	}
	switch mt {
	case "application/sdp":
		return string(data), nil, nil
	case "multipart/form-data":
	default:
		return "", nil, fmt.Errorf("%w (got %q)", ErrContentType, mt)
	}
	boundary := params["boundary"]
	if boundary == "" {
		return "", nil, fmt.Errorf("%w: no boundary", ErrBadMultipart)
	}
	r := multipart.NewReader(bytes.NewReader(data), boundary)
	var haveSDP bool
	for {
		p, err := r.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", nil, fmt.Errorf("%w: %w", ErrBadMultipart, err)
		}
		v, err := io.ReadAll(p)
		if err != nil {
			return "", nil, fmt.Errorf("%w: %w", ErrBadMultipart, err)
		}
		switch p.FormName() {
		case "sdp":
			offer, haveSDP = string(v), true
		case "session":
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(v, &obj); err != nil || obj == nil {
				return "", nil, ErrBadSession
			}
			session = json.RawMessage(v)
		}
	}
	if !haveSDP {
		return "", nil, ErrNoSDPPart
	}
	return offer, session, nil
}
