package audio

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// Rates this package accepts from a WAV header or a resampler caller.
const (
	MinRate = 1000
	MaxRate = 768000
)

// WAV format tags (the fmt chunk's wFormatTag, or the first two bytes of an extensible
// SubFormat GUID).
const (
	wavFormatPCM        = 0x0001
	wavFormatFloat      = 0x0003
	wavFormatALaw       = 0x0006
	wavFormatMuLaw      = 0x0007
	wavFormatExtensible = 0xfffe
)

// UnknownLength, given to WAVHeader as dataBytes, writes 0xFFFFFFFF in both size fields, the
// convention of streamed WAV (OpenAI's speech endpoint, ffmpeg to a pipe). DecodeWAV reads such a
// data chunk to the end of the input.
const UnknownLength = -1

// wavPlaceholderSize and above, as a data size, is a streaming writer's placeholder rather than a
// length: no real WAV here holds 2 GiB, and a short file declaring it was not truncated but streamed.
const wavPlaceholderSize = 0x7FFF0000

const wavStreamSize = 0xffffffff

// ksDataFormatTail is the GUID suffix every KSDATAFORMAT_SUBTYPE_* shares after its two-byte tag.
var ksDataFormatTail = []byte{0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xaa, 0x00, 0x38, 0x9b, 0x71}

// DecodeWAV reads a whole WAV stream. See DecodeWAVBytes.
func DecodeWAV(r io.Reader) (samples []float32, rate int, err error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, 0, fmt.Errorf("audio: wav: read: %w", err)
	}
	return DecodeWAVBytes(b)
}

type wavFormat struct {
	tag        int
	channels   int
	rate       int
	blockAlign int
	bits       int // container bits per sample
}

// DecodeWAVBytes decodes a RIFF/WAVE file to mono float32 in [-1, 1] (channels averaged) and its
// sample rate. It walks the chunks (skipping unknown ones and their pad bytes) and decodes
// PCM 8/16/24/32-bit, IEEE float 32/64-bit, G.711 μ-law and A-law, plain or
// WAVE_FORMAT_EXTENSIBLE, at any channel count and any rate in [MinRate, MaxRate]. Failures wrap
// ErrWAVHeader, ErrWAVEncoding, ErrWAVTruncated, ErrWAVEmpty or ErrRate. Memory is bounded by
// len(b): sizes in the header are never trusted beyond the bytes present. It is OpenWAV over b,
// read whole; a caller that must not hold the whole signal reads an OpenWAV stream a block at a time.
func DecodeWAVBytes(b []byte) (samples []float32, rate int, err error) {
	st, err := OpenWAV(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, 0, err
	}
	out, err := st.Next(int(st.Frames()))
	if err != nil {
		return nil, 0, err
	}
	return out, st.Rate(), nil
}

// maxFmtChunk bounds the fmt chunk read into memory: real ones are 16, 18 or 40 bytes.
const maxFmtChunk = 64 << 10

// WAVStream decodes the samples of a RIFF/WAVE file a block at a time (Next), so a long upload
// is never held decoded, let alone resampled, whole. OpenWAV has checked the header and the
// data's size, so Next fails only when the reader does.
type WAVStream struct {
	r      io.Reader
	format *wavFormat
	left   int64 // data bytes not yet decoded
	frames int64
}

// OpenWAV reads a RIFF/WAVE header from r, which holds size bytes in all, up to the start of
// the samples. Everything DecodeWAVBytes checks is checked here, before any sample is decoded:
// the chunks, the format, and that the data chunk's declared size is present and whole frames
// (a streamed WAV's placeholder size runs to the end of the input, a partial last frame dropped).
// Chunks other than fmt are skipped without being held.
func OpenWAV(r io.Reader, size int64) (*WAVStream, error) {
	var head [12]byte
	if size < 12 {
		return nil, fmt.Errorf("audio: wav: no RIFF/WAVE signature: %w", ErrWAVHeader)
	}
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, fmt.Errorf("audio: wav: read: %w", err)
	}
	if string(head[0:4]) != "RIFF" || string(head[8:12]) != "WAVE" {
		return nil, fmt.Errorf("audio: wav: no RIFF/WAVE signature: %w", ErrWAVHeader)
	}
	var format *wavFormat
	rest := size - 12 // bytes not yet read
	for {
		if rest == 0 {
			if format == nil {
				return nil, fmt.Errorf("audio: wav: no fmt chunk: %w", ErrWAVHeader)
			}
			return nil, fmt.Errorf("audio: wav: no data chunk: %w", ErrWAVHeader)
		}
		if rest < 8 {
			return nil, fmt.Errorf("audio: wav: chunk header of %d bytes: %w", rest, ErrWAVTruncated)
		}
		var ch [8]byte
		if _, err := io.ReadFull(r, ch[:]); err != nil {
			return nil, fmt.Errorf("audio: wav: read: %w", err)
		}
		id, chunkSize := string(ch[0:4]), int64(binary.LittleEndian.Uint32(ch[4:8]))
		rest -= 8
		if id == "data" {
			if format == nil {
				return nil, fmt.Errorf("audio: wav: data chunk before fmt: %w", ErrWAVHeader)
			}
			data := chunkSize
			switch {
			case chunkSize == wavStreamSize || chunkSize >= wavPlaceholderSize:
				// Streamed WAV: the data runs to the end of the input. Writers that cannot seek
				// put 0xFFFFFFFF or a huge placeholder (espeak-ng --stdout writes 0x7FFFF000);
				// a trailing partial frame is dropped rather than refused.
				data = rest - rest%int64(max(format.blockAlign, 1))
			case chunkSize > rest:
				return nil, fmt.Errorf("audio: wav: data chunk declares %d bytes, %d present: %w", chunkSize, rest, ErrWAVTruncated)
			}
			if data == 0 {
				return nil, fmt.Errorf("audio: wav: %w", ErrWAVEmpty)
			}
			if data%int64(format.blockAlign) != 0 {
				return nil, fmt.Errorf("audio: wav: %d data bytes end mid-frame (block %d): %w", data, format.blockAlign, ErrWAVTruncated)
			}
			return &WAVStream{r: r, format: format, left: data, frames: data / int64(format.blockAlign)}, nil
		}
		if chunkSize > rest {
			return nil, fmt.Errorf("audio: wav: %q chunk declares %d bytes, %d present: %w", id, chunkSize, rest, ErrWAVTruncated)
		}
		skip := chunkSize
		if chunkSize%2 == 1 && rest > chunkSize { // RIFF pads odd-sized chunks to even length
			skip++
		}
		if id == "fmt " {
			if format != nil {
				return nil, fmt.Errorf("audio: wav: second fmt chunk: %w", ErrWAVHeader)
			}
			if chunkSize > maxFmtChunk {
				return nil, fmt.Errorf("audio: wav: fmt chunk of %d bytes: %w", chunkSize, ErrWAVHeader)
			}
			body := make([]byte, chunkSize)
			if _, err := io.ReadFull(r, body); err != nil {
				return nil, fmt.Errorf("audio: wav: read: %w", err)
			}
			f, err := parseWAVFormat(body)
			if err != nil {
				return nil, err
			}
			format = f
			skip -= chunkSize
			rest -= chunkSize
		}
		if _, err := io.CopyN(io.Discard, r, skip); err != nil {
			return nil, fmt.Errorf("audio: wav: read: %w", err)
		}
		rest -= skip
	}
}

// Rate is the stream's sample rate.
func (s *WAVStream) Rate() int { return s.format.rate }

// Frames is the number of (mono) samples the stream holds in all.
func (s *WAVStream) Frames() int64 { return s.frames }

// Next decodes up to n more frames, mixed to mono; io.EOF once all were read.
func (s *WAVStream) Next(n int) ([]float32, error) {
	if s.left == 0 {
		return nil, io.EOF
	}
	want := min(int64(max(n, 1))*int64(s.format.blockAlign), s.left)
	buf := make([]byte, want)
	if _, err := io.ReadFull(s.r, buf); err != nil {
		return nil, fmt.Errorf("audio: wav: read: %w", err)
	}
	s.left -= want
	return decodeWAVData(buf, s.format)
}

func parseWAVFormat(body []byte) (*wavFormat, error) {
	if len(body) < 16 {
		return nil, fmt.Errorf("audio: wav: fmt chunk of %d bytes: %w", len(body), ErrWAVHeader)
	}
	le := binary.LittleEndian
	f := &wavFormat{
		tag:        int(le.Uint16(body[0:])),
		channels:   int(le.Uint16(body[2:])),
		rate:       int(le.Uint32(body[4:])),
		blockAlign: int(le.Uint16(body[12:])),
		bits:       int(le.Uint16(body[14:])),
	}
	if f.tag == wavFormatExtensible {
		// cbSize(2) validBits(2) channelMask(4) SubFormat GUID(16)
		if len(body) < 40 || le.Uint16(body[16:]) < 22 {
			return nil, fmt.Errorf("audio: wav: extensible fmt chunk of %d bytes: %w", len(body), ErrWAVHeader)
		}
		guid := body[24:40]
		if !bytes.Equal(guid[2:], ksDataFormatTail) {
			return nil, fmt.Errorf("audio: wav: extensible subformat %x: %w", guid, ErrWAVEncoding)
		}
		f.tag = int(le.Uint16(guid))
	}
	if f.channels == 0 {
		return nil, fmt.Errorf("audio: wav: zero channels: %w", ErrWAVHeader)
	}
	if f.rate < MinRate || f.rate > MaxRate {
		return nil, fmt.Errorf("audio: wav: rate %d Hz outside [%d, %d]: %w", f.rate, MinRate, MaxRate, ErrRate)
	}
	supported := false
	switch f.tag {
	case wavFormatPCM:
		supported = f.bits == 8 || f.bits == 16 || f.bits == 24 || f.bits == 32
	case wavFormatFloat:
		supported = f.bits == 32 || f.bits == 64
	case wavFormatMuLaw, wavFormatALaw:
		supported = f.bits == 8
	}
	if !supported {
		return nil, fmt.Errorf("audio: wav: format tag 0x%04x with %d bits per sample: %w", f.tag, f.bits, ErrWAVEncoding)
	}
	if f.blockAlign != f.channels*f.bits/8 {
		return nil, fmt.Errorf("audio: wav: block align %d for %d channels of %d bits: %w", f.blockAlign, f.channels, f.bits, ErrWAVHeader)
	}
	return f, nil
}

func decodeWAVData(data []byte, f *wavFormat) ([]float32, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("audio: wav: %w", ErrWAVEmpty)
	}
	if len(data)%f.blockAlign != 0 {
		return nil, fmt.Errorf("audio: wav: %d data bytes end mid-frame (block %d): %w", len(data), f.blockAlign, ErrWAVTruncated)
	}
	frames := len(data) / f.blockAlign
	if f.tag == wavFormatPCM && f.bits == 16 && f.channels == 1 { // the common case, without the per-sample call
		out := make([]float32, frames)
		for i := range out {
			out[i] = float32(int16(binary.LittleEndian.Uint16(data[2*i:]))) / (1 << 15)
		}
		return out, nil
	}
	width := f.bits / 8
	var sample func(p []byte) float64
	le := binary.LittleEndian
	switch f.tag {
	case wavFormatPCM:
		switch f.bits {
		case 8:
			sample = func(p []byte) float64 { return (float64(p[0]) - 128) / 128 }
		case 16:
			sample = func(p []byte) float64 { return float64(int16(le.Uint16(p))) / (1 << 15) }
		case 24:
			sample = func(p []byte) float64 {
				v := int32(uint32(p[0])<<8|uint32(p[1])<<16|uint32(p[2])<<24) >> 8
				return float64(v) / (1 << 23)
			}
		case 32:
			sample = func(p []byte) float64 { return float64(int32(le.Uint32(p))) / (1 << 31) }
		}
	case wavFormatFloat:
		finite := func(v float64) float64 {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return 0
			}
			return v
		}
		if f.bits == 32 {
			sample = func(p []byte) float64 { return finite(float64(math.Float32frombits(le.Uint32(p)))) }
		} else {
			sample = func(p []byte) float64 { return finite(math.Float64frombits(le.Uint64(p))) }
		}
	case wavFormatMuLaw:
		sample = func(p []byte) float64 { return float64(mulawTable[p[0]]) / (1 << 15) }
	case wavFormatALaw:
		sample = func(p []byte) float64 { return float64(alawTable[p[0]]) / (1 << 15) }
	}
	out := make([]float32, frames)
	if f.channels == 1 {
		for i := range out {
			out[i] = float32(sample(data[i*width:]))
		}
		return out, nil
	}
	inv := 1 / float64(f.channels)
	for i := range out {
		frame := data[i*f.blockAlign:]
		var sum float64
		for c := 0; c < f.channels; c++ {
			sum += sample(frame[c*width:])
		}
		out[i] = float32(sum * inv)
	}
	return out, nil
}

// WAVHeader returns the 44-byte header of a canonical PCM WAV (format tag 1) holding dataBytes of
// samples. dataBytes = UnknownLength writes 0xFFFFFFFF as both sizes, for streaming when the
// length is not known; a length past the 32-bit RIFF limit is written the same way.
func WAVHeader(rate, channels, bitsPerSample, dataBytes int) []byte {
	blockAlign := channels * bitsPerSample / 8
	riffSize, dataSize := uint32(wavStreamSize), uint32(wavStreamSize)
	if dataBytes >= 0 && uint64(dataBytes)+36 < wavStreamSize {
		dataSize = uint32(dataBytes)
		riffSize = uint32(36 + dataBytes + dataBytes%2)
	}
	h := make([]byte, 0, 44)
	le := binary.LittleEndian
	h = append(h, "RIFF"...)
	h = le.AppendUint32(h, riffSize)
	h = append(h, "WAVEfmt "...)
	h = le.AppendUint32(h, 16)
	h = le.AppendUint16(h, wavFormatPCM)
	h = le.AppendUint16(h, uint16(channels))
	h = le.AppendUint32(h, uint32(rate))
	h = le.AppendUint32(h, uint32(rate*blockAlign))
	h = le.AppendUint16(h, uint16(blockAlign))
	h = le.AppendUint16(h, uint16(bitsPerSample))
	h = append(h, "data"...)
	h = le.AppendUint32(h, dataSize)
	return h
}

// EncodeWAV writes mono 16-bit PCM as a complete WAV file.
func EncodeWAV(w io.Writer, pcm16 []int16, rate int) error {
	buf := WAVHeader(rate, 1, 16, 2*len(pcm16))
	buf = AppendInt16Bytes(buf, pcm16)
	if _, err := w.Write(buf); err != nil {
		return fmt.Errorf("audio: wav: write: %w", err)
	}
	return nil
}
