package codec

/*
#cgo LDFLAGS: -lmp3lame
#include <stdlib.h>
#include <lame/lame.h>
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"
)

// mp3Encoder is LAME: mono, constant bitrate, no Xing/LAME tag (the stream is written as it is
// made, so nothing is patched at the end), frames handed out as LAME completes them.
type mp3Encoder struct {
	gf   C.lame_t
	out  []byte
	emit func([]byte) error
}

// ErrLAME wraps a failure LAME reported.
var ErrLAME = errors.New("codec: LAME failed")

// The samples a decoder reads from voiced's streamed mp3 beyond the input (at 24 kHz, MPEG-2
// layer III, 576-sample frames): LAME's encoder delay (576) and the decoder's own (529) before
// the audio, and under one frame of padding after it. No LAME/Xing tag says so: the first frame
// goes out before the length is known, and FFmpeg trims the end only when the tag states the
// frame count (TestMP3StreamedLength).
const (
	MP3StreamExtraMin = 576 + mp3DecoderDelay
	MP3StreamExtraMax = MP3StreamExtraMin + 576
)

// mp3Bitrate is the constant bitrate of the mp3 voiced serves (kbit/s): speech at 24 kHz mono.
const mp3Bitrate = 64

func newMP3(rate int, emit func([]byte) error) (*mp3Encoder, error) {
	gf := C.lame_init()
	if gf == nil {
		return nil, fmt.Errorf("%w: lame_init", ErrLAME)
	}
	C.lame_set_in_samplerate(gf, C.int(rate))
	C.lame_set_out_samplerate(gf, C.int(rate))
	C.lame_set_num_channels(gf, 1)
	C.lame_set_mode(gf, C.MONO)
	C.lame_set_brate(gf, mp3Bitrate)
	C.lame_set_quality(gf, 5)
	C.lame_set_bWriteVbrTag(gf, 0)
	if rc := C.lame_init_params(gf); rc < 0 {
		C.lame_close(gf)
		return nil, fmt.Errorf("%w: lame_init_params %d", ErrLAME, int(rc))
	}
	return &mp3Encoder{gf: gf, emit: emit}, nil
}

func (e *mp3Encoder) Write(pcm []int16) error {
	if e.gf == nil {
		return ErrClosed
	}
	if len(pcm) == 0 {
		return nil
	}
	// LAME's bound on the output of n samples: 1.25n + 7200.
	need := len(pcm)*5/4 + 7200
	if cap(e.out) < need {
		e.out = make([]byte, need)
	}
	e.out = e.out[:need]
	n := C.lame_encode_buffer(e.gf, (*C.short)(unsafe.Pointer(&pcm[0])), nil, C.int(len(pcm)),
		(*C.uchar)(unsafe.Pointer(&e.out[0])), C.int(need))
	if n < 0 {
		return fmt.Errorf("%w: lame_encode_buffer %d", ErrLAME, int(n))
	}
	if n == 0 {
		return nil
	}
	return e.emit(e.out[:n])
}

func (e *mp3Encoder) Close() error {
	if e.gf == nil {
		return nil
	}
	defer e.free()
	buf := make([]byte, 7200)
	n := C.lame_encode_flush(e.gf, (*C.uchar)(unsafe.Pointer(&buf[0])), C.int(len(buf)))
	if n < 0 {
		return fmt.Errorf("%w: lame_encode_flush %d", ErrLAME, int(n))
	}
	if n == 0 {
		return nil
	}
	return e.emit(buf[:n])
}

func (e *mp3Encoder) free() {
	if e.gf != nil {
		C.lame_close(e.gf)
		e.gf = nil
	}
}

func (e *mp3Encoder) Abort() { e.free() }
