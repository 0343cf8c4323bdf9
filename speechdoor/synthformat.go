package speechdoor

import (
	"bytes"
	"context"
	"net/http"
	"strings"

	"github.com/coder/websocket"

	"github.com/voiced/voiced/audio/codec"
	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/speechcore/kokoro"
)

// WS /v1/synthesize's ?format= (issue 28): raw PCM16LE 24 kHz by default, or each utterance
// encoded as one mp3, Ogg Opus, FLAC or WAV stream. Every audio header is then followed by a
// binary frame of that stream's bytes for the piece (empty when the encoder holds the samples
// back: FLAC's 4096-sample blocks, LAME's frames), and the utterance's stream ends with an
// {"type":"audioEnd"} header and a binary frame of the encoder's tail (the last frames, Ogg's
// last page), before utteranceComplete: an utterance's binary frames joined are one whole file.
// AAC is served by POST /v1/audio/speech only: its encoder is an ffmpeg process, whose start
// (0.3–0.9 s measured) would come before every utterance's first audio.

var errSynthFormat = door.Refuse(ErrUnsupportedFormat,
	"format takes pcm (raw PCM16LE 24 kHz, the default), mp3, opus (Ogg Opus), flac or wav; aac is served by POST /v1/audio/speech only (its encoder's process start would delay every utterance)")

// synthFormat reads ?format=: "" for raw PCM, else one of codec's formats the door streams.
func synthFormat(r *http.Request) (string, *door.Refusal) {
	f := strings.ToLower(r.URL.Query().Get("format"))
	switch f {
	case "", codec.PCM, "pcm16", "pcm16le":
		return "", nil
	case codec.MP3, codec.Opus, codec.FLAC, codec.WAV:
		return f, nil
	}
	return "", errSynthFormat
}

// synthEncoding is what the ready frame says the binary frames carry.
func synthEncoding(format string) string {
	if format == "" {
		return "pcm16le"
	}
	return format
}

// utteranceEncoder sends one utterance's audio: raw PCM frames, or its encoded stream.
type utteranceEncoder struct {
	s   *synthSession
	enc codec.Encoder // nil for raw PCM
	buf bytes.Buffer
}

func (s *synthSession) newUtteranceEncoder() (*utteranceEncoder, error) {
	u := &utteranceEncoder{s: s}
	if s.format == "" {
		return u, nil
	}
	enc, err := codec.NewEncoder(s.format, kokoro.SampleRate, &u.buf)
	if err != nil {
		return nil, err
	}
	u.enc = enc
	return u, nil
}

// audio sends one piece's binary frame; false when the session is over.
func (u *utteranceEncoder) audio(ctx context.Context, pcm []int16) bool {
	if u.enc == nil {
		return u.s.w.pcm(ctx, 0, pcm)
	}
	if err := u.enc.Write(pcm); err != nil {
		u.s.svc.log.Error("synthesize: encode", "format", u.s.format, "err", err)
		return false
	}
	return u.s.w.encodedFrame(ctx, u.take(), len(pcm))
}

// end closes the utterance's stream: the audioEnd header and the tail's frame.
func (u *utteranceEncoder) end(ctx context.Context, utterance int) error {
	if u.enc == nil {
		return nil
	}
	if err := u.enc.Close(); err != nil {
		return err
	}
	if !u.s.w.json(ctx, 0, map[string]any{"type": "audioEnd", "utterance": utterance, "format": u.s.format}) {
		return ctx.Err()
	}
	u.s.w.encodedFrame(ctx, u.take(), 0)
	return nil
}

func (u *utteranceEncoder) abort() {
	if u.enc != nil {
		u.enc.Abort()
	}
}

func (u *utteranceEncoder) take() []byte {
	data := append([]byte{}, u.buf.Bytes()...) // still a frame when empty: nil writes nothing
	u.buf.Reset()
	return data
}

// encodedFrame queues a binary frame of encoded audio carrying samples of speech (the meter
// counts them when the frame is written), with pcm's backpressure.
func (w *socketWriter) encodedFrame(ctx context.Context, data []byte, samples int) bool {
	w.samplesMu.Lock()
	w.frameSamples = append(w.frameSamples, samples)
	w.samplesMu.Unlock()
	n := int64(len(data))
	w.queued.Add(n)
	if !w.send(ctx, 0, websocket.MessageBinary, data) {
		w.queued.Add(-n)
		w.samplesMu.Lock()
		w.frameSamples = w.frameSamples[:len(w.frameSamples)-1]
		w.samplesMu.Unlock()
		return false
	}
	return w.waitDrained(ctx)
}

// popSamples is the samples of the encoded frame the writer took off its queue.
func (w *socketWriter) popSamples() int {
	w.samplesMu.Lock()
	defer w.samplesMu.Unlock()
	if len(w.frameSamples) == 0 {
		return 0
	}
	n := w.frameSamples[0]
	w.frameSamples = w.frameSamples[1:]
	return n
}
