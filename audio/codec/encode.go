package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/mewkiz/flac"
	"github.com/mewkiz/flac/frame"
	"github.com/mewkiz/flac/meta"
	"github.com/pion/rtp"
	"github.com/pion/webrtc/v4/pkg/media/oggwriter"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/audio/opus"
)

// The response formats of OpenAI's POST /v1/audio/speech.
const (
	MP3  = "mp3"
	Opus = "opus" // Ogg Opus (RFC 7845)
	AAC  = "aac"  // ADTS AAC-LC
	FLAC = "flac"
	WAV  = "wav"
	PCM  = "pcm" // PCM16LE mono at the synthesis rate
)

// Formats lists the response formats, OpenAI's default (mp3) first.
var Formats = []string{MP3, Opus, AAC, FLAC, WAV, PCM}

// ErrClosed: Write after Close or Abort.
var ErrClosed = errors.New("codec: encoder closed")

// ErrUnknownFormat: NewEncoder was asked for a format not in Formats.
var ErrUnknownFormat = errors.New("codec: unknown response format")

// Encoder turns mono PCM16 at the rate it was made for into one format's bytes, handing them to
// its writer as soon as the format lets it (a frame, a page, a block).
type Encoder interface {
	// Write encodes pcm; what is complete is written before it returns (AAC: soon after, by the
	// copier goroutine).
	Write(pcm []int16) error
	// Close encodes what is held back, writes the stream's end and frees the encoder; it does not
	// close the writer.
	Close() error
	// Abort frees the encoder without writing more (the response is being cut).
	Abort()
}

// ContentType is the Content-Type of a format's body.
func ContentType(format string) string {
	switch format {
	case MP3:
		return "audio/mpeg"
	case Opus:
		return "audio/ogg"
	case AAC:
		return "audio/aac"
	case FLAC:
		return "audio/flac"
	case WAV:
		return "audio/wav"
	default:
		return "audio/pcm"
	}
}

// Known reports whether format (lower case) is one of Formats.
func Known(format string) bool {
	for _, f := range Formats {
		if f == format {
			return true
		}
	}
	return false
}

// NewEncoder returns an encoder of format for mono PCM16 at rate, writing to out. Nothing is
// written until the first Write (a header goes out with the first audio).
func NewEncoder(format string, rate int, out io.Writer) (Encoder, error) {
	emit := func(b []byte) error { _, err := out.Write(b); return err }
	switch strings.ToLower(format) {
	case MP3:
		return newMP3(rate, emit)
	case Opus:
		return newOggOpus(rate, out)
	case AAC:
		return newAAC(rate, out)
	case FLAC:
		return &flacEncoder{rate: rate, out: out}, nil
	case WAV:
		return &rawEncoder{emit: emit, header: audio.WAVHeader(rate, 1, 16, audio.UnknownLength)}, nil
	case PCM:
		return &rawEncoder{emit: emit}, nil
	}
	return nil, fmt.Errorf("%w: %q", ErrUnknownFormat, format)
}

// rawEncoder is PCM16LE, after a streaming WAV header when it has one.
type rawEncoder struct {
	emit   func([]byte) error
	header []byte
	closed bool
}

func (e *rawEncoder) Write(pcm []int16) error {
	if e.closed {
		return ErrClosed
	}
	if e.header != nil {
		if err := e.emit(e.header); err != nil {
			return err
		}
		e.header = nil
	}
	if len(pcm) == 0 {
		return nil
	}
	return e.emit(audio.Int16ToBytes(pcm))
}

func (e *rawEncoder) Close() error {
	if e.closed {
		return nil
	}
	e.closed = true
	if e.header != nil { // no audio at all: still a valid (empty) WAV
		return e.emit(e.header)
	}
	return nil
}

func (e *rawEncoder) Abort() { e.closed = true }

// flacBlock is the FLAC block size (samples): libFLAC's default for 24 kHz and up.
const flacBlock = 4096

// flacEncoder writes FLAC (16-bit mono) with mewkiz/flac: the stream header with the first audio,
// then one frame per flacBlock samples (the last one shorter). STREAMINFO's sample count is 0,
// "unknown", as a streamed FLAC's is.
type flacEncoder struct {
	rate    int
	out     io.Writer
	enc     *flac.Encoder
	pending []int32
	closed  bool
}

// writerOnly hides a writer's Close and Seek from mewkiz/flac (whose Close would close the
// response, and whose Seek would try to patch a header already sent).
type writerOnly struct{ w io.Writer }

func (w writerOnly) Write(p []byte) (int, error) { return w.w.Write(p) }

func (e *flacEncoder) Write(pcm []int16) error {
	if e.closed {
		return ErrClosed
	}
	if e.enc == nil {
		info := &meta.StreamInfo{
			BlockSizeMin: 16, BlockSizeMax: flacBlock, SampleRate: uint32(e.rate),
			NChannels: 1, BitsPerSample: 16,
		}
		enc, err := flac.NewEncoder(writerOnly{e.out}, info)
		if err != nil {
			return fmt.Errorf("codec: flac header: %w", err)
		}
		e.enc = enc
	}
	for _, s := range pcm {
		e.pending = append(e.pending, int32(s))
	}
	for len(e.pending) >= flacBlock {
		if err := e.frame(e.pending[:flacBlock]); err != nil {
			return err
		}
		e.pending = e.pending[:copy(e.pending, e.pending[flacBlock:])]
	}
	return nil
}

func (e *flacEncoder) frame(samples []int32) error {
	f := &frame.Frame{
		Header: frame.Header{
			HasFixedBlockSize: true, BlockSize: uint16(len(samples)), SampleRate: uint32(e.rate),
			Channels: frame.ChannelsMono, BitsPerSample: 16,
		},
		Subframes: []*frame.Subframe{{
			SubHeader: frame.SubHeader{Pred: frame.PredVerbatim},
			Samples:   append([]int32(nil), samples...), NSamples: len(samples),
		}},
	}
	if err := e.enc.WriteFrame(f); err != nil {
		return fmt.Errorf("codec: flac frame: %w", err)
	}
	return nil
}

func (e *flacEncoder) Close() error {
	if e.closed {
		return nil
	}
	if e.enc == nil {
		if err := e.Write(nil); err != nil {
			return err
		}
	}
	e.closed = true
	if len(e.pending) > 0 {
		if err := e.frame(e.pending); err != nil {
			return err
		}
		e.pending = nil
	}
	return e.enc.Close()
}

func (e *flacEncoder) Abort() { e.closed = true }

// oggOpusBitrate is the Opus bitrate of the speech voiced serves (bit/s).
const oggOpusBitrate = 48000

// oggPreSkip is the pre-skip pion's Ogg writer puts in OpusHead (RFC 7845 recommends 3840).
const oggPreSkip = 3840

// oggOpusEncoder resamples to Opus's 48 kHz, encodes 20 ms frames with libopus and writes them
// as Ogg pages with pion's Ogg writer (one packet a page, so a frame goes out as it is made).
// The writer's OpusHead says pre-skip 3840; libopus delays only its lookahead, so 3840 −
// lookahead samples of silence go first and a decoder's output lines up with the input.
type oggOpusEncoder struct {
	rs      *audio.Resampler
	enc     *opus.Encoder
	ogg     *oggwriter.Writer
	track   *oggwriter.Track
	out     io.Writer
	rate    int
	pending []int16
	seq     uint16
	closed  bool
}

func newOggOpus(rate int, out io.Writer) (*oggOpusEncoder, error) {
	rs, err := audio.NewResampler(rate, opus.SampleRate)
	if err != nil {
		return nil, err
	}
	enc, err := opus.NewEncoder(oggOpusBitrate)
	if err != nil {
		return nil, err
	}
	look, err := enc.Lookahead()
	if err != nil {
		enc.Close()
		return nil, err
	}
	return &oggOpusEncoder{rs: rs, enc: enc, out: out, rate: rate,
		pending: make([]int16, max(0, oggPreSkip-look))}, nil
}

func (e *oggOpusEncoder) Write(pcm []int16) error {
	if e.closed {
		return ErrClosed
	}
	if e.ogg == nil {
		w, err := oggwriter.NewWriter(writerOnly{e.out})
		if err != nil {
			return fmt.Errorf("codec: ogg: %w", err)
		}
		track, err := w.NewTrack(1, oggwriter.WithSampleRate(uint32(e.rate)), oggwriter.WithVendor("voiced (libopus)"))
		if err != nil {
			return fmt.Errorf("codec: ogg: %w", err)
		}
		e.ogg, e.track = w, track
	}
	up := e.rs.Process(audio.Int16ToFloat32(pcm))
	e.pending = append(e.pending, audio.Float32ToInt16(up)...)
	return e.frames()
}

func (e *oggOpusEncoder) frames() error {
	for len(e.pending) >= opus.FrameSamples {
		packet, err := e.enc.Encode(e.pending[:opus.FrameSamples])
		if err != nil {
			return err
		}
		e.seq++
		if err := e.track.WriteRTP(&rtp.Packet{Header: rtp.Header{SSRC: 1, SequenceNumber: e.seq}, Payload: packet}); err != nil {
			return fmt.Errorf("codec: ogg page: %w", err)
		}
		e.pending = e.pending[:copy(e.pending, e.pending[opus.FrameSamples:])]
	}
	return nil
}

func (e *oggOpusEncoder) Close() error {
	if e.closed {
		return nil
	}
	if e.ogg == nil {
		if err := e.Write(nil); err != nil {
			return err
		}
	}
	defer e.Abort()
	e.pending = append(e.pending, audio.Float32ToInt16(e.rs.Flush())...)
	// Pad to whole frames, with room for libopus's lookahead to come out.
	look, _ := e.enc.Lookahead()
	total := len(e.pending) + look
	total = (total + opus.FrameSamples - 1) / opus.FrameSamples * opus.FrameSamples
	e.pending = append(e.pending, make([]int16, total-len(e.pending))...)
	if err := e.frames(); err != nil {
		return err
	}
	return e.ogg.Close()
}

func (e *oggOpusEncoder) Abort() {
	e.closed = true
	e.enc.Close()
}

// le16 is binary.LittleEndian, named once for the readers of this package.
var le16 = binary.LittleEndian
