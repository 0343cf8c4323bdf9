package speechdoor

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/audio/codec"
	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/speechcore/kokoro"
)

// OpenAI's speed range for /v1/audio/speech. Kokoro speaks MinSpeed..MaxSpeed (0.5–2.0)
// itself; beyond, it speaks at its bound and the audio is time-stretched (audio.Stretch, pitch
// kept) by the rest: 4.0 = Kokoro 2.0 × stretch 2, 0.25 = Kokoro 0.5 × stretch 0.5.
const (
	minSpeechSpeed = 0.25
	maxSpeechSpeed = 4.0
)

// speechSpeed splits a requested speed into Kokoro's and the time-stretch's (1 = none); nil is
// the default speed.
func speechSpeed(v *float64) (model float32, stretch float64, err error) {
	if v == nil {
		return 0, 1, nil
	}
	s := *v
	if !(s >= minSpeechSpeed && s <= maxSpeechSpeed) {
		return 0, 0, door.Refuse(ErrSpeedOutOfRange, fmt.Sprintf("speed %g: use %g to %g", s, minSpeechSpeed, maxSpeechSpeed))
	}
	m := min(max(s, kokoro.MinSpeed), kokoro.MaxSpeed)
	return float32(m), s / m, nil
}

// speechFormat reads response_format (mp3, OpenAI's default, when empty) and stream_format.
func speechFormat(responseFormat, streamFormat string) (format string, sse bool, err error) {
	format = strings.ToLower(strings.TrimSpace(responseFormat))
	if format == "" {
		format = codec.MP3
	}
	if !codec.Known(format) {
		return "", false, door.Refuse(ErrUnsupportedFormat, fmt.Sprintf("response_format %q is not served: use %s", clip(responseFormat), strings.Join(codec.Formats, ", ")))
	}
	if format == codec.AAC && !codec.HaveFFmpeg() {
		return "", false, door.Refuse(ErrUnsupportedFormat, "response_format aac needs ffmpeg, which this server does not have: use mp3, opus, flac, wav or pcm")
	}
	switch streamFormat {
	case "", "audio":
	case "sse":
		sse = true
	default:
		return "", false, door.Refuse(ErrUnsupportedStreamFormat, fmt.Sprintf("stream_format %q: use audio or sse", clip(streamFormat)))
	}
	return format, sse, nil
}

// ErrUnsupportedStreamFormat refuses a stream_format other than audio or sse.
var ErrUnsupportedStreamFormat = door.NewRefusal(http.StatusBadRequest, "unsupported_stream_format",
	`stream_format must be "audio" (the body is the audio) or "sse" (speech.audio.delta events)`)

// speechBody is the response body as the encoder writes it: each write goes out at once
// (flushed, with ttsWriteTimeout to do it), raw or, for stream_format sse, as one
// speech.audio.delta event carrying the bytes in base64. Used by one goroutine at a time: the
// handler's, or while an AAC encoder lives, its copier's.
type speechBody struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	sse bool
}

func (b *speechBody) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	out := p
	if b.sse {
		ev, _ := json.Marshal(struct {
			Type  string `json:"type"`
			Audio string `json:"audio"`
		}{"speech.audio.delta", base64.StdEncoding.EncodeToString(p)})
		out = append(append([]byte("data: "), ev...), '\n', '\n')
	}
	if err := b.send(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (b *speechBody) send(p []byte) error {
	b.rc.SetWriteDeadline(time.Now().Add(ttsWriteTimeout)) // unsupported only where there is no conn to bound
	if _, err := b.w.Write(p); err != nil {
		return fmt.Errorf("%w: %w", errBodyWrite, err)
	}
	if err := b.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return fmt.Errorf("%w: %w", errBodyWrite, err)
	}
	return nil
}

// done ends an sse stream with speech.audio.done. usage is left out: voiced counts seconds, not
// tokens (the field is optional in OpenAI's event).
func (b *speechBody) done() error {
	if !b.sse {
		return nil
	}
	return b.send([]byte("data: {\"type\":\"speech.audio.done\"}\n\n"))
}

// beginSpeechBody writes the headers of a speech response (its first audio exists).
func beginSpeechBody(w http.ResponseWriter, format string, sse bool, stretch float64) {
	if sse {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
	} else {
		w.Header().Set("Content-Type", codec.ContentType(format))
	}
	w.Header().Set("X-Sample-Rate", fmt.Sprint(kokoro.SampleRate))
	if stretch != 1 {
		w.Header().Set("X-Voiced-Time-Stretch", fmt.Sprintf("%g", stretch))
	}
	w.WriteHeader(http.StatusOK)
}

// stretched applies the time-stretch to a chunk of Kokoro's audio (pcm itself when none).
func stretched(pcm []int16, stretch float64) []int16 {
	if stretch == 1 {
		return pcm
	}
	return audio.Float32ToInt16(audio.Stretch(audio.Int16ToFloat32(pcm), kokoro.SampleRate, stretch))
}
