package speechdoor

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strings"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/audio/codec"
	"github.com/voiced/voiced/door"
)

// Refusals of an upload's format, by name (issue 28).
var (
	ErrUnsupportedAudioFormat = door.NewRefusal(http.StatusUnsupportedMediaType, "unsupported_audio_format",
		"the file is not audio voiced reads: send flac, mp3, mp4/m4a (AAC), ogg (Opus, Vorbis), wav, webm (Opus) or aac, or raw PCM16LE mono 16 kHz declared with Content-Type audio/pcm")
	ErrInvalidAudio = door.NewRefusal(http.StatusBadRequest, "invalid_audio",
		"the audio file is broken or truncated")
)

// rawPCMType reports whether a file part's Content-Type declares raw PCM16LE (audio/pcm,
// audio/L16, audio/x-raw): the one upload read by what the client says, since raw samples have
// no bytes of their own to recognise.
func rawPCMType(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	switch strings.ToLower(mt) {
	case "audio/pcm", "audio/l16", "audio/x-raw", "audio/x-pcm":
		return true
	}
	return false
}

// uploadFile is an upload's bytes, in memory or in the spool file: both read at an offset.
type uploadFile interface {
	io.Reader
	io.ReaderAt
}

// decodedUpload decodes a compressed upload of kind (codec.Sniff's) whole before anything is
// transcribed or billed: to 16 kHz PCM16 in memory up to uploadInMemory, spooled to a temporary
// file past it, counting seconds as it goes, so a broken or truncated file is refused by name
// (invalid_audio) and one over MaxUploadSeconds (audio_too_long) before a window is decoded.
// Memory is a block of audio at a time whatever the file's length. close removes the spool.
func decodedUpload(file uploadFile, size int64, kind string, maxSeconds int) (u *uploadAudio, closeFn func(), refusal *door.Refusal) {
	src, err := codec.Open(file, size, kind, maxSeconds)
	if err != nil {
		return nil, nil, decodeRefusal(err)
	}
	defer src.Close()
	var rs *audio.Resampler
	if src.Rate() != audio.WhisperSampleRate {
		if rs, err = audio.NewResampler(src.Rate(), audio.WhisperSampleRate); err != nil {
			return nil, nil, door.Refuse(ErrUnsupportedRate, ErrUnsupportedRate.Message()+" ("+err.Error()+")")
		}
	}
	sp := &pcmSpool{}
	fail := func(r *door.Refusal) (*uploadAudio, func(), *door.Refusal) {
		sp.close()
		return nil, nil, r
	}
	samples := 0
	for {
		block, err := src.Next(uploadBlockSeconds * src.Rate())
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fail(decodeRefusal(err))
		}
		if rs != nil {
			block = rs.Process(block)
		}
		samples += len(block)
		if samples > maxSeconds*audio.WhisperSampleRate {
			return fail(door.Refuse(ErrAudioTooLong, fmt.Sprintf("the upload holds over %d s of audio: split it", maxSeconds)))
		}
		if err := sp.write(audio.Float32ToPCM16(block)); err != nil {
			return fail(door.Refuse(ErrInvalidAudio, "spooling the decoded audio failed"))
		}
	}
	if rs != nil {
		if err := sp.write(audio.Float32ToPCM16(rs.Flush())); err != nil {
			return fail(door.Refuse(ErrInvalidAudio, "spooling the decoded audio failed"))
		}
	}
	if sp.size == 0 {
		return fail(ErrEmptyUpload)
	}
	r, err := sp.reader()
	if err != nil {
		return fail(door.Refuse(ErrInvalidAudio, "spooling the decoded audio failed"))
	}
	return rawPCMUpload(r), sp.close, nil
}

// decodeRefusal names a decoder's failure for the client.
func decodeRefusal(err error) *door.Refusal {
	switch {
	case errors.Is(err, codec.ErrNoFFmpeg):
		return door.Refuse(ErrUnsupportedAudioFormat, "this format needs ffmpeg, which this server does not have: send wav, mp3 or ogg (Opus)")
	case errors.Is(err, codec.ErrUnsupported):
		return door.Refuse(ErrUnsupportedAudioFormat, ErrUnsupportedAudioFormat.Message()+" ("+err.Error()+")")
	}
	return door.Refuse(ErrInvalidAudio, ErrInvalidAudio.Message()+": "+strings.TrimPrefix(err.Error(), "codec: broken or truncated audio: "))
}

// unsupportedUpload refuses a file whose bytes are no format voiced reads, naming what it
// looked like when it is known.
func unsupportedUpload(kind string) *door.Refusal {
	if kind == "" {
		return ErrUnsupportedAudioFormat
	}
	return door.Refuse(ErrUnsupportedAudioFormat, "the file looks like "+kind+", which voiced does not read: send flac, mp3, mp4/m4a (AAC), ogg (Opus, Vorbis), wav, webm (Opus) or aac")
}

// pcmSpool holds decoded PCM16: in memory up to uploadInMemory, then in a temporary file.
type pcmSpool struct {
	mem  bytes.Buffer
	file *os.File
	size int64
}

func (s *pcmSpool) write(p []byte) error {
	s.size += int64(len(p))
	if s.file == nil && s.mem.Len()+len(p) <= uploadInMemory {
		s.mem.Write(p)
		return nil
	}
	if s.file == nil {
		f, err := os.CreateTemp("", "voiced-decoded-*")
		if err != nil {
			return err
		}
		s.file = f
		if _, err := f.Write(s.mem.Bytes()); err != nil {
			return err
		}
		s.mem = bytes.Buffer{}
	}
	_, err := s.file.Write(p)
	return err
}

func (s *pcmSpool) reader() (io.Reader, error) {
	if s.file == nil {
		return bytes.NewReader(s.mem.Bytes()), nil
	}
	if _, err := s.file.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return s.file, nil
}

func (s *pcmSpool) close() {
	if s.file != nil {
		s.file.Close()
		os.Remove(s.file.Name())
		s.file = nil
	}
}

// openAnyUpload opens an upload by its bytes: WAV through package audio's reader, the formats
// audio/codec reads decoded whole first (decodedUpload), raw PCM only when the part's
// Content-Type declares it; anything else is refused by name. closeFn releases what the open
// holds (a spool of decoded audio).
func openAnyUpload(up *upload) (src *uploadAudio, closeFn func(), refusal *door.Refusal) {
	nothing := func() {}
	if up.size == 0 {
		return nil, nothing, ErrEmptyUpload
	}
	head := make([]byte, min(up.size, codec.SniffLen))
	if _, err := up.file.ReadAt(head, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, nothing, door.Refuse(ErrBadForm, "reading the upload failed")
	}
	kind, readable := codec.Sniff(head)
	switch {
	case kind == codec.KindWAV || (!readable && rawPCMType(up.contentType)):
		src, refusal = openUpload(io.NewSectionReader(up.file, 0, up.size), up.size)
		return src, nothing, refusal
	case readable:
		src, closeFn, refusal = decodedUpload(up.file, up.size, kind, MaxUploadSeconds)
		if refusal != nil {
			return nil, nothing, refusal
		}
		return src, closeFn, nil
	}
	return nil, nothing, unsupportedUpload(kind)
}

// rawPCMUpload reads r as raw PCM16LE mono 16 kHz, a block at a time.
func rawPCMUpload(r io.Reader) *uploadAudio {
	buf := make([]byte, 2*uploadBlockSeconds*audio.WhisperSampleRate)
	return &uploadAudio{block: func() ([]float32, error) {
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			return audio.PCM16ToFloat32(buf[:n&^1])
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			err = io.EOF
		}
		return nil, err
	}}
}
