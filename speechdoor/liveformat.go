package speechdoor

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/coder/websocket"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/audio/codec"
	"github.com/voiced/voiced/door"
)

// The audio formats of the streaming hearing doors (WS /v1/transcribe, POST /v1/audio/transcript),
// named by ?format= (issue 28): raw PCM16LE mono 16 kHz by default, or Opus in the containers a
// browser's MediaRecorder writes (WebM from Chrome and Safari, Ogg from Firefox), decoded as their
// chunks arrive. A file format that cannot be read as it arrives (mp3, flac, m4a, …) goes to
// POST /v1/audio/transcriptions, which reads the whole file.
const rawPCMFormat = "pcm16"

var errLiveFormat = door.Refuse(ErrUnsupportedAudioFormat,
	"format takes pcm16 (raw PCM16LE mono 16 kHz, the default), webm or ogg (Opus, as a browser's MediaRecorder writes it, sent in chunks as it records); a whole file in another format goes to POST /v1/audio/transcriptions")

// liveFormat reads ?format=: "" for raw PCM, else one of codec.LiveFormats.
func liveFormat(r *http.Request) (string, *door.Refusal) {
	f := strings.ToLower(r.URL.Query().Get("format"))
	switch f {
	case "", rawPCMFormat, "pcm", "pcm16le":
		return "", nil
	case codec.LiveOgg, codec.LiveWebM:
		return f, nil
	}
	return "", errLiveFormat
}

// newLiveDecoder makes the decoder of a live format at Whisper's rate (nil for raw PCM).
func newLiveDecoder(format string) (*codec.LiveDecoder, error) {
	if format == "" {
		return nil, nil
	}
	return codec.NewLiveDecoder(format, audio.WhisperSampleRate)
}

// liveEncoding is what the transcribe door's ready frame says it reads.
func liveEncoding(format string) string {
	if format == "" {
		return "pcm16le"
	}
	return format + "/opus"
}

// errLiveLimit stops a push's decoding at the transcript's limit.
var errLiveLimit = errors.New("speechdoor: the transcript's limit")

// livePush decodes one push of a live transcript. The checks that refuse a push "not taken,
// retry it" come first: once its bytes are decoded the stream has moved on and cannot take them
// again. Decoding stops one sample past the transcript's limit (its memory is bounded by it).
func (d *TranscriptDoor) livePush(t *transcript, body []byte) ([]float32, *door.Refusal) {
	limit, _, _, _ := d.limits()
	t.mu.Lock()
	closed, behind := t.sq == nil, len(t.window) >= int(transcriptBehind.Seconds()*audio.WhisperSampleRate)
	room := int64(limit.Seconds()*audio.WhisperSampleRate) - t.pushed
	t.mu.Unlock()
	switch {
	case closed:
		return nil, ErrTranscriptClosed
	case behind:
		return nil, ErrTranscriptBehind
	}
	var pcm []float32
	err := t.live.Write(body, func(b []float32) error {
		if int64(len(pcm)+len(b)) > room {
			return errLiveLimit
		}
		pcm = append(pcm, b...)
		return nil
	})
	switch {
	case errors.Is(err, errLiveLimit):
		return nil, ErrTranscriptLimit
	case errors.Is(err, codec.ErrClosed):
		return nil, ErrTranscriptClosed
	case err != nil:
		return nil, decodeRefusal(err)
	}
	return pcm, nil
}

// errStopTaking ends a live frame's decoding when the session takes no more audio (drain).
var errStopTaking = errors.New("speechdoor: the session takes no more audio")

// takeLive decodes one binary frame of a live container, each piece taken as it is decoded. A
// broken stream or another codec is refused by name and the socket closed (what follows cannot
// be read); the open segment's final still goes out. stop: the read loop returns code, reason.
func (s *transcribeSession) takeLive(ctx context.Context, data []byte) (code websocket.StatusCode, reason string, stop bool) {
	err := s.live.Write(data, func(pcm []float32) error {
		if !s.take(ctx, pcm) {
			return errStopTaking
		}
		return nil
	})
	switch {
	case err == nil:
		return 0, "", false
	case errors.Is(err, errStopTaking):
		return 0, "", true // draining: the watcher closes the socket
	}
	refusal := decodeRefusal(err)
	s.send(ctx, door.Frame(refusal))
	return websocket.StatusUnsupportedData, refusal.Name(), true
}

// endLive hands on the live decoder's last samples and frees it, before the stream's end.
func (s *transcribeSession) endLive(ctx context.Context) {
	if s.live == nil {
		return
	}
	s.live.End(func(pcm []float32) error { s.take(ctx, pcm); return nil }) // a cut-short tail: what was whole was taken
	s.live.Close()
}
