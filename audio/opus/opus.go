// Package opus encodes and decodes Opus (RFC 6716) through libopus (Debian libopus-dev): 48 kHz
// mono, 20 ms frames (960 samples), as WebRTC carries voice. A lost packet is concealed (Decode
// with a nil packet, libopus's PLC); DecodeFEC recovers a lost frame from the next packet's
// in-band FEC when the sender put one there (Encoder sets in-band FEC on by default).
//
// A thin cgo wrapper of the few libopus calls voiced needs: no maintained Go binding builds here
// without libopusfile (gopkg.in/hraban/opus.v2 wants it for its stream reader).
//
// An Encoder or a Decoder holds libopus state: one goroutine at a time; Close frees it.
package opus

/*
#cgo pkg-config: opus
#include <opus.h>

static int enc_ctl_int(OpusEncoder *e, int req, int v) {
	switch (req) {
	case 0: return opus_encoder_ctl(e, OPUS_SET_BITRATE(v));
	case 1: return opus_encoder_ctl(e, OPUS_SET_INBAND_FEC(v));
	case 2: return opus_encoder_ctl(e, OPUS_SET_PACKET_LOSS_PERC(v));
	case 3: return opus_encoder_ctl(e, OPUS_SET_COMPLEXITY(v));
	}
	return OPUS_BAD_ARG;
}

static int enc_lookahead(OpusEncoder *e, opus_int32 *v) {
	return opus_encoder_ctl(e, OPUS_GET_LOOKAHEAD(v));
}
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"
)

const (
	// SampleRate is the rate voiced encodes and decodes at (WebRTC's Opus clock).
	SampleRate = 48000
	// FrameSamples is one 20 ms frame at 48 kHz mono.
	FrameSamples = 960
	// MaxPacket bounds one encoded packet (RFC 6716 §3.4 recommends 1275 bytes per frame).
	MaxPacket = 1275
	// maxFrame is the longest frame a packet may carry (120 ms at 48 kHz).
	maxFrame = 5760
)

// Errors, by name.
var (
	// ErrBadPacket: the packet is not valid Opus (libopus refused it).
	ErrBadPacket = errors.New("opus: invalid packet")
	// ErrFrameSize: Encode was given something other than a 20 ms frame (960 samples).
	ErrFrameSize = errors.New("opus: encode wants one 20 ms frame of 960 samples")
	// ErrClosed: the Encoder or Decoder was closed.
	ErrClosed = errors.New("opus: closed")
	// ErrEmptyPacket: a zero-length packet (lost packets are signalled with nil to Decode).
	ErrEmptyPacket = errors.New("opus: empty packet")
)

func libErr(op string, code C.int) error {
	msg := C.GoString(C.opus_strerror(code))
	if code == C.OPUS_INVALID_PACKET || code == C.OPUS_BUFFER_TOO_SMALL {
		return fmt.Errorf("%w (%s: %s)", ErrBadPacket, op, msg)
	}
	return fmt.Errorf("opus: %s: %s", op, msg)
}

// Encoder encodes 20 ms mono 48 kHz frames of 16-bit PCM into Opus packets (VoIP application).
type Encoder struct {
	st  *C.OpusEncoder
	buf [MaxPacket]byte
}

// NewEncoder makes a VoIP encoder at bitrate bits/s (0 = libopus's default), in-band FEC on,
// tuned for 5% expected loss.
func NewEncoder(bitrate int) (*Encoder, error) {
	var code C.int
	st := C.opus_encoder_create(SampleRate, 1, C.OPUS_APPLICATION_VOIP, &code)
	if code != C.OPUS_OK {
		return nil, libErr("encoder_create", code)
	}
	e := &Encoder{st: st}
	if bitrate > 0 {
		if c := C.enc_ctl_int(st, 0, C.int(bitrate)); c != C.OPUS_OK {
			e.Close()
			return nil, libErr("set bitrate", c)
		}
	}
	C.enc_ctl_int(st, 1, 1)
	C.enc_ctl_int(st, 2, 5)
	return e, nil
}

// Encode encodes one 20 ms frame (960 samples) and returns the packet; the slice is valid
// until the next Encode.
func (e *Encoder) Encode(pcm []int16) ([]byte, error) {
	if e.st == nil {
		return nil, ErrClosed
	}
	if len(pcm) != FrameSamples {
		return nil, fmt.Errorf("%w (got %d)", ErrFrameSize, len(pcm))
	}
	n := C.opus_encode(e.st, (*C.opus_int16)(unsafe.Pointer(&pcm[0])), FrameSamples,
		(*C.uchar)(unsafe.Pointer(&e.buf[0])), MaxPacket)
	if n < 0 {
		return nil, libErr("encode", n)
	}
	return e.buf[:n], nil
}

// Lookahead is the encoder's delay in samples at 48 kHz (OPUS_GET_LOOKAHEAD): the last
// Lookahead samples given to Encode come out of a decoder only with the next packet.
func (e *Encoder) Lookahead() (int, error) {
	if e.st == nil {
		return 0, ErrClosed
	}
	var v C.opus_int32
	if c := C.enc_lookahead(e.st, &v); c != C.OPUS_OK {
		return 0, libErr("lookahead", c)
	}
	return int(v), nil
}

// Close frees the encoder; safe to call twice.
func (e *Encoder) Close() {
	if e.st != nil {
		C.opus_encoder_destroy(e.st)
		e.st = nil
	}
}

// Decoder decodes Opus packets into 48 kHz mono 16-bit PCM.
type Decoder struct {
	st  *C.OpusDecoder
	buf [maxFrame]int16
	// last is the sample count of the last decoded frame: PLC conceals that much.
	last int
}

// NewDecoder makes a 48 kHz mono decoder.
func NewDecoder() (*Decoder, error) {
	var code C.int
	st := C.opus_decoder_create(SampleRate, 1, &code)
	if code != C.OPUS_OK {
		return nil, libErr("decoder_create", code)
	}
	return &Decoder{st: st, last: FrameSamples}, nil
}

// Decode decodes one packet; a nil packet means "lost" and returns a concealed frame as long
// as the last one (PLC). The slice is valid until the next call.
func (d *Decoder) Decode(packet []byte) ([]int16, error) {
	return d.decode(packet, false)
}

// DecodeFEC recovers the frame lost before packet from packet's in-band FEC data (or conceals
// it if packet carries none); call it with the packet that follows a loss, then Decode that
// packet as usual.
func (d *Decoder) DecodeFEC(packet []byte) ([]int16, error) {
	if len(packet) == 0 {
		return nil, ErrEmptyPacket
	}
	return d.decode(packet, true)
}

func (d *Decoder) decode(packet []byte, fec bool) ([]int16, error) {
	if d.st == nil {
		return nil, ErrClosed
	}
	var n C.int
	switch {
	case packet == nil:
		n = C.opus_decode(d.st, nil, 0, (*C.opus_int16)(unsafe.Pointer(&d.buf[0])), C.int(d.last), 0)
	case len(packet) == 0:
		return nil, ErrEmptyPacket
	case len(packet) > MaxPacket*3:
		return nil, fmt.Errorf("%w (%d bytes)", ErrBadPacket, len(packet))
	default:
		size := C.int(maxFrame)
		flag := C.int(0)
		if fec {
			size, flag = C.int(d.last), 1
		}
		n = C.opus_decode(d.st, (*C.uchar)(unsafe.Pointer(&packet[0])), C.opus_int32(len(packet)),
			(*C.opus_int16)(unsafe.Pointer(&d.buf[0])), size, flag)
	}
	if n < 0 {
		return nil, libErr("decode", n)
	}
	if packet != nil && !fec {
		d.last = int(n)
	}
	return d.buf[:n], nil
}

// PacketSamples is how many samples (at 48 kHz) packet carries, read from its TOC by libopus
// (a 20 ms packet: 960); ErrBadPacket if it is not valid Opus.
func PacketSamples(packet []byte) (int, error) {
	if len(packet) == 0 {
		return 0, ErrEmptyPacket
	}
	n := C.opus_packet_get_nb_samples((*C.uchar)(unsafe.Pointer(&packet[0])), C.opus_int32(len(packet)), SampleRate)
	if n < 0 {
		return 0, libErr("packet_get_nb_samples", n)
	}
	return int(n), nil
}

// Close frees the decoder; safe to call twice.
func (d *Decoder) Close() {
	if d.st != nil {
		C.opus_decoder_destroy(d.st)
		d.st = nil
	}
}
