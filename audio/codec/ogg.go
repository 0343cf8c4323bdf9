package codec

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// oggPackets reads the packets of an Ogg stream's first logical stream (RFC 3533), checking each
// page's CRC. pion's oggreader returns a page's payload without its lacing table, so a page of
// several packets (what ffmpeg and opusenc write) could not be split; this is the few lines that
// do it.
type oggPackets struct {
	r       *bufio.Reader
	serial  uint32
	started bool
	packets [][]byte // complete packets of the current page, not yet handed out
	partial []byte   // a packet continued on the next page
}

// maxOggPacket bounds one packet (an Opus packet is at most 1275 bytes × 6 frames).
const maxOggPacket = 1 << 20

func newOggPackets(r io.Reader) *oggPackets { return &oggPackets{r: bufio.NewReaderSize(r, 64<<10)} }

var oggCRC = func() *[256]uint32 {
	var t [256]uint32
	for i := range t {
		r := uint32(i) << 24
		for range 8 {
			if r&0x80000000 != 0 {
				r = r<<1 ^ 0x04c11db7
			} else {
				r <<= 1
			}
		}
		t[i] = r
	}
	return &t
}()

// next returns the next packet; io.EOF after the last whole one.
func (o *oggPackets) next() ([]byte, error) {
	for len(o.packets) == 0 {
		if err := o.page(); err != nil {
			return nil, err
		}
	}
	p := o.packets[0]
	o.packets = o.packets[1:]
	return p, nil
}

func (o *oggPackets) page() error {
	var h [27]byte
	if _, err := io.ReadFull(o.r, h[:]); err != nil {
		if errors.Is(err, io.EOF) {
			if len(o.partial) > 0 {
				return io.ErrUnexpectedEOF
			}
			return io.EOF
		}
		return err
	}
	if string(h[:4]) != "OggS" || h[4] != 0 {
		return errors.New("lost Ogg page sync")
	}
	lacing := make([]byte, h[26])
	if _, err := io.ReadFull(o.r, lacing); err != nil {
		return unexpected(err)
	}
	size := 0
	for _, l := range lacing {
		size += int(l)
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(o.r, body); err != nil {
		return unexpected(err)
	}
	return o.accept(h[:], lacing, body)
}

// accept checks one whole page (header, lacing table, body) and collects its packets: what
// page reads from a stream and oggPush is handed a chunk at a time.
func (o *oggPackets) accept(h, lacing, body []byte) error {
	want := binary.LittleEndian.Uint32(h[22:])
	clear(h[22:26])
	crc := uint32(0)
	for _, part := range [][]byte{h, lacing, body} {
		for _, b := range part {
			crc = crc<<8 ^ oggCRC[byte(crc>>24)^b]
		}
	}
	if crc != want {
		return errors.New("Ogg page checksum mismatch")
	}
	serial := binary.LittleEndian.Uint32(h[14:])
	if !o.started {
		o.started, o.serial = true, serial
	}
	if serial != o.serial { // another logical stream (a chained or multiplexed file): not ours
		return nil
	}
	if h[5]&1 == 0 && len(o.partial) > 0 {
		return errors.New("Ogg packet left unfinished")
	}
	at := 0
	for _, l := range lacing {
		o.partial = append(o.partial, body[at:at+int(l)]...)
		at += int(l)
		if len(o.partial) > maxOggPacket {
			return fmt.Errorf("an Ogg packet over %d bytes", maxOggPacket)
		}
		if l < 255 {
			o.packets = append(o.packets, o.partial)
			o.partial = nil
		}
	}
	return nil
}

func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// mp3Check walks an mp3's frames by their headers: an ID3v2 tag first, ID3v1/APE/Lyrics tags at
// the end are allowed; a frame cut short, or bytes that are no frame, make it broken.
func mp3Check(r io.Reader, size int64) error {
	br := bufio.NewReaderSize(r, 64<<10)
	pos := int64(0)
	if head, _ := br.Peek(10); len(head) == 10 && string(head[:3]) == "ID3" {
		n := int64(head[6]&0x7f)<<21 | int64(head[7]&0x7f)<<14 | int64(head[8]&0x7f)<<7 | int64(head[9]&0x7f) + 10
		if head[5]&0x10 != 0 {
			n += 10 // footer
		}
		if n > size {
			return broken("mp3", errors.New("the ID3 tag runs past the end"))
		}
		if _, err := br.Discard(int(n)); err != nil {
			return broken("mp3", err)
		}
		pos = n
	}
	frames := 0
	for pos < size {
		h, _ := br.Peek(8)
		if !isMP3Frame(h) {
			if len(h) >= 3 && (string(h[:3]) == "TAG" || string(h) == "APETAGEX" || string(h[:6]) == "LYRICS") {
				break
			}
			if frames == 0 {
				return broken("mp3", errors.New("no mp3 frame where the audio should begin"))
			}
			return broken("mp3", fmt.Errorf("no mp3 frame at byte %d", pos))
		}
		n := mp3FrameLen(h)
		if pos+int64(n) > size {
			return broken("mp3", fmt.Errorf("the last frame is cut short (file truncated at byte %d of %d)", size, pos+int64(n)))
		}
		if _, err := br.Discard(n); err != nil {
			return broken("mp3", err)
		}
		pos += int64(n)
		frames++
	}
	if frames == 0 {
		return broken("mp3", errors.New("no mp3 frames"))
	}
	return nil
}

var (
	mp3Rates1 = [16]int{0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320}
	mp3Rates2 = [16]int{0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160}
	mp3Hz     = [4][3]int{{11025, 12000, 8000}, {}, {22050, 24000, 16000}, {44100, 48000, 32000}}
)

// mp3FrameLen is a layer III frame's length in bytes from its (valid) header.
func mp3FrameLen(h []byte) int {
	v := binary.BigEndian.Uint32(h)
	version := (v >> 19) & 3
	bi := (v >> 12) & 15
	hz := mp3Hz[version][(v>>10)&3]
	pad := int((v >> 9) & 1)
	if version == 3 {
		return 144*mp3Rates1[bi]*1000/hz + pad
	}
	return 72*mp3Rates2[bi]*1000/hz + pad
}

// mp3Start is the offset of the first frame (past an ID3v2 tag).
func mp3Start(r io.ReaderAt) int64 {
	var h [10]byte
	if n, _ := r.ReadAt(h[:], 0); n == 10 && string(h[:3]) == "ID3" {
		n := int64(h[6]&0x7f)<<21 | int64(h[7]&0x7f)<<14 | int64(h[8]&0x7f)<<7 | int64(h[9]&0x7f) + 10
		if h[5]&0x10 != 0 {
			n += 10
		}
		return n
	}
	return 0
}

// mp3Version25 reports whether the first frame is MPEG 2.5 (8, 11.025 or 12 kHz).
func mp3Version25(r io.ReaderAt) bool {
	var h [4]byte
	n, _ := r.ReadAt(h[:], mp3Start(r))
	return n == 4 && isMP3Frame(h[:]) && (binary.BigEndian.Uint32(h[:])>>19)&3 == 0
}

// mp3DecoderDelay is an MPEG layer III decoder's own delay (samples), which LAME's tag does not
// count (the 529 FFmpeg and LAME's own decoder add).
const mp3DecoderDelay = 529

// mp3Priming is how many samples to drop from go-mp3's output before the audio a LAME/Info tag
// describes starts: the tag frame itself (silence) + the encoder delay it states + the decoder
// delay. 0 without a tag (nothing is known; nothing is dropped).
func mp3Priming(r io.ReaderAt) int {
	start := mp3Start(r)
	var f [256]byte
	n, _ := r.ReadAt(f[:], start)
	if n < 4 || !isMP3Frame(f[:]) {
		return 0
	}
	v := binary.BigEndian.Uint32(f[:])
	mpeg1 := (v>>19)&3 == 3
	mono := (v>>6)&3 == 3
	side := map[[2]bool]int{{true, true}: 17, {true, false}: 32, {false, true}: 9, {false, false}: 17}[[2]bool{mpeg1, mono}]
	at := 4 + side
	if at+8 > n || (string(f[at:at+4]) != "Xing" && string(f[at:at+4]) != "Info") {
		return 0
	}
	flags := binary.BigEndian.Uint32(f[at+4:])
	at += 8
	for bit, size := range []int{4, 4, 100, 4} { // frames, bytes, TOC, quality
		if flags&(1<<bit) != 0 {
			at += size
		}
	}
	frame := 1152
	if !mpeg1 {
		frame = 576
	}
	// LAME's extension: a 9-byte encoder version, then at +21 the delay and padding, 12 bits each.
	if at+24 > n || string(f[at:at+4]) != "LAME" && string(f[at:at+4]) != "Lavc" && string(f[at:at+4]) != "Lavf" {
		return frame + mp3DecoderDelay
	}
	delay := int(f[at+21])<<4 | int(f[at+22])>>4
	return frame + delay + mp3DecoderDelay
}
