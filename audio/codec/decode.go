package codec

import (
	"errors"
	"fmt"
	"io"

	"github.com/hajimehoshi/go-mp3"

	"github.com/voiced/voiced/audio/opus"
)

// Decoding failures, by name (the doors map them to refusals).
var (
	// ErrUnsupported: not a format voiced decodes (Sniff's kind says what it looked like).
	ErrUnsupported = errors.New("codec: unsupported audio format")
	// ErrBroken: the file is recognised but broken or truncated.
	ErrBroken = errors.New("codec: broken or truncated audio")
	// ErrNoFFmpeg: the format needs the ffmpeg binary and the server has none.
	ErrNoFFmpeg = errors.New("codec: this format needs ffmpeg, which is not installed on the server")
)

// Stream is decoded audio, mono, at Rate(), read a block at a time.
type Stream interface {
	Rate() int
	// Next returns up to max samples (floats in [-1, 1]); io.EOF after the last. A broken or
	// truncated file fails with an error wrapping ErrBroken.
	Next(max int) ([]float32, error)
	Close() error
}

// Open decodes the upload in ra (size bytes) of the given kind (Sniff's; not WAV, which package
// audio reads). Memory is a block at a time whatever the file's length; maxSeconds bounds what an
// external decoder is asked to produce (the caller still counts what it reads).
func Open(ra io.ReaderAt, size int64, kind string, maxSeconds int) (Stream, error) {
	r := io.NewSectionReader(ra, 0, size)
	switch kind {
	case KindMP3:
		if err := mp3Check(r, size); err != nil {
			return nil, err
		}
		if mp3Version25(r) { // 8, 11.025, 12 kHz: go-mp3 does not read MPEG 2.5
			return openFFmpeg(ra, size, maxSeconds, kind)
		}
		return openMP3(r, size)
	case KindOggOpus:
		return openOggOpus(r)
	case KindFLAC, KindOggVorbis, KindMP4, KindWebM, KindADTS:
		// FLAC too: mewkiz/flac's decoder logs a line per frame of a 24 kHz (or 176.4 kHz) file
		// through the process-wide log package (frame.go), which a client could use to flood the
		// server's log; its encoder, which voiced serves FLAC with, does not.
		return openFFmpeg(ra, size, maxSeconds, kind)
	}
	return nil, fmt.Errorf("%w: %s", ErrUnsupported, kind)
}

func broken(format string, err error) error {
	return fmt.Errorf("%w: %s: %v", ErrBroken, format, err)
}

// mp3Stream is go-mp3 (16-bit stereo out, mixed here to mono). go-mp3 drops a frame cut short at
// the end without a word, so the frames' byte lengths are walked first (mp3Check). Like FFmpeg,
// it skips what the encoder put before the audio when a LAME/Info tag says how much (gapless
// playback): a file made by LAME starts with an Info frame of silence and LAME's delay.
type mp3Stream struct {
	d    *mp3.Decoder
	buf  []byte
	skip int // samples still to drop from the start
}

// mp3Panic turns a panic in go-mp3 into ErrBroken: v0.3.4 indexes past its tables on some
// malformed frames that pass mp3Check (maindata.getScaleFactorsMpeg2, found by
// FuzzDecodeInProcess: testdata/fuzz).
func mp3Panic(err *error) {
	if p := recover(); p != nil {
		*err = broken("mp3", fmt.Errorf("the decoder failed on a malformed frame: %v", p))
	}
}

func openMP3(r *io.SectionReader, size int64) (_ Stream, err error) {
	defer mp3Panic(&err)
	d, err := mp3.NewDecoder(io.NewSectionReader(r, 0, size))
	if err != nil {
		return nil, broken("mp3", err)
	}
	return &mp3Stream{d: d, skip: mp3Priming(r)}, nil
}

func (s *mp3Stream) Rate() int { return s.d.SampleRate() }

func (s *mp3Stream) Next(max int) (_ []float32, err error) {
	defer mp3Panic(&err)
	for s.skip > 0 {
		n := min(s.skip, 4096)
		got, err := io.ReadFull(s.d, make([]byte, 4*n))
		s.skip -= got / 4
		if err != nil {
			s.skip = 0
			break
		}
	}
	if cap(s.buf) < 4*max {
		s.buf = make([]byte, 4*max)
	}
	n, err := io.ReadFull(s.d, s.buf[:4*max])
	n &^= 3
	if n == 0 {
		if err == nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, io.EOF
		}
		return nil, broken("mp3", err)
	}
	out := make([]float32, n/4)
	for i := range out {
		l := int16(le16.Uint16(s.buf[4*i:]))
		r := int16(le16.Uint16(s.buf[4*i+2:]))
		out[i] = (float32(l) + float32(r)) / 65536
	}
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return out, broken("mp3", err)
	}
	return out, nil
}

func (s *mp3Stream) Close() error { return nil }

// oggOpusStream demuxes Ogg (oggPackets) and decodes with libopus at 48 kHz mono (libopus mixes a
// stereo stream down), dropping OpusHead's pre-skip.
type oggOpusStream struct {
	pk      *oggPackets
	dec     *opus.Decoder
	skip    int
	pending []float32
	ended   bool
}

func openOggOpus(r io.Reader) (Stream, error) {
	pk := newOggPackets(r)
	head, err := pk.next()
	if err != nil {
		return nil, broken("ogg", err)
	}
	if len(head) < 19 || string(head[:8]) != "OpusHead" {
		return nil, broken("ogg", errors.New("the first packet is not OpusHead"))
	}
	if head[18] != 0 && head[18] != 1 {
		return nil, fmt.Errorf("%w: Ogg Opus channel mapping family %d", ErrUnsupported, head[18])
	}
	if tags, err := pk.next(); err != nil || len(tags) < 8 || string(tags[:8]) != "OpusTags" {
		return nil, broken("ogg", errors.New("the second packet is not OpusTags"))
	}
	dec, err := opus.NewDecoder()
	if err != nil {
		return nil, err
	}
	return &oggOpusStream{pk: pk, dec: dec, skip: int(le16.Uint16(head[10:]))}, nil
}

func (s *oggOpusStream) Rate() int { return opus.SampleRate }

func (s *oggOpusStream) Next(max int) ([]float32, error) {
	for len(s.pending) < max && !s.ended {
		p, err := s.pk.next()
		if errors.Is(err, io.EOF) {
			s.ended = true
			break
		}
		if err != nil {
			return nil, broken("ogg", err)
		}
		if len(p) == 0 {
			continue
		}
		pcm, err := s.dec.Decode(p)
		if err != nil {
			return nil, broken("opus", err)
		}
		drop := min(s.skip, len(pcm))
		s.skip -= drop
		for _, v := range pcm[drop:] {
			s.pending = append(s.pending, float32(v)/32768)
		}
	}
	if len(s.pending) == 0 {
		return nil, io.EOF
	}
	n := min(max, len(s.pending))
	out := append([]float32(nil), s.pending[:n]...)
	s.pending = s.pending[:copy(s.pending, s.pending[n:])]
	return out, nil
}

func (s *oggOpusStream) Close() error { s.dec.Close(); return nil }
