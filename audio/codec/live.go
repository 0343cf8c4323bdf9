package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/audio/opus"
)

// The containers the streaming doors read as they arrive: what a browser's MediaRecorder makes
// (Chrome and Safari: WebM Opus; Firefox: Ogg Opus), sent a chunk at a time.
const (
	LiveOgg  = "ogg"  // Ogg Opus (RFC 7845)
	LiveWebM = "webm" // WebM/Matroska with an Opus track
)

// LiveFormats lists the containers NewLiveDecoder reads.
var LiveFormats = []string{LiveOgg, LiveWebM}

// maxLiveHeld bounds what a LiveDecoder holds of one page or element whose bytes have not all
// arrived (an Ogg page is at most 65,307 bytes; an Opus block a few KiB).
const maxLiveHeld = 1 << 20

// liveBatch is how many output samples a Write gathers before it hands them on (the rest go
// at the Write's end).
const liveBatch = 16000

// LiveDecoder decodes Opus in an Ogg or WebM container arriving a chunk at a time, cut anywhere,
// to mono float32 at the rate it was made for. Memory is the one page or element not yet whole
// (≤ 1 MiB) plus one batch of audio: decoded audio goes to the caller's emit as it is made, so a
// caller that blocks in emit slows the stream. Write and End are for one goroutine; Close may
// come from another.
type LiveDecoder struct {
	mu      sync.Mutex
	format  string
	held    []byte // bytes of a page or element not yet whole
	begun   bool   // the container's first bytes were checked
	dec     *opus.Decoder
	rs      *audio.Resampler
	skip    int   // pre-skip samples (48 kHz) still to drop
	err     error // sticky: the stream is broken
	closed  bool
	pending []float32

	ogg        oggPackets
	oggHeaders int // header packets seen (OpusHead, OpusTags)
	webm       webmState
}

// NewLiveDecoder returns a decoder of format (LiveOgg or LiveWebM) producing mono at rate Hz;
// ErrUnsupported names another format.
func NewLiveDecoder(format string, rate int) (*LiveDecoder, error) {
	if format != LiveOgg && format != LiveWebM {
		return nil, fmt.Errorf("%w: %q is not a live container (ogg, webm)", ErrUnsupported, format)
	}
	rs, err := audio.NewResampler(opus.SampleRate, rate)
	if err != nil {
		return nil, err
	}
	dec, err := opus.NewDecoder()
	if err != nil {
		return nil, err
	}
	return &LiveDecoder{format: format, dec: dec, rs: rs}, nil
}

// Write takes the stream's next bytes and hands the audio they complete to emit, in order, in
// pieces of about a second or less. An error wraps ErrBroken (the stream is corrupt: it stays
// so) or ErrUnsupported (not the declared container, or not Opus inside it), or is emit's (the
// audio of that call is dropped; the stream goes on with the next Write).
func (d *LiveDecoder) Write(chunk []byte, emit func([]float32) error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ErrClosed
	}
	if d.err != nil {
		return d.err
	}
	d.held = append(d.held, chunk...)
	var emitErr error
	caller := emit
	emit = func(pcm []float32) error {
		emitErr = caller(pcm)
		return emitErr
	}
	var err error
	if d.format == LiveOgg {
		err = d.oggFeed(emit)
	} else {
		err = d.webmFeed(emit)
	}
	if err == nil && len(d.held) > maxLiveHeld {
		err = broken(d.format, fmt.Errorf("a page or element over %d bytes", maxLiveHeld))
	}
	if err == nil {
		err = d.flush(emit)
	}
	if err != nil {
		if emitErr == nil { // the stream is broken; the caller's own error is not the stream's
			d.err = err
		}
		return err
	}
	if len(d.held) > 0 && cap(d.held) > 4*len(d.held)+4096 {
		d.held = append([]byte(nil), d.held...) // what a big chunk left over, not its whole array
	}
	return nil
}

// End ends the stream: the resampler's tail goes to emit. A page or element left unfinished is
// an error wrapping ErrBroken (what came before it was already handed on).
func (d *LiveDecoder) End(emit func([]float32) error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ErrClosed
	}
	if d.err != nil {
		return d.err
	}
	d.pending = append(d.pending, d.rs.Flush()...)
	if err := d.flush(emit); err != nil {
		return err
	}
	if len(d.held) > 0 || d.webm.skip > 0 {
		return broken(d.format, errors.New("the stream ended inside a page or element"))
	}
	return nil
}

// Close frees the decoder; safe to call twice and while another goroutine is in Write (it
// waits for that Write).
func (d *LiveDecoder) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.closed {
		d.closed = true
		d.dec.Close()
		d.held, d.pending = nil, nil
	}
}

func (d *LiveDecoder) flush(emit func([]float32) error) error {
	if len(d.pending) == 0 {
		return nil
	}
	out := d.pending
	d.pending = nil
	return emit(out)
}

// packet decodes one Opus packet into pending, handing pending on once it holds a batch.
func (d *LiveDecoder) packet(p []byte, emit func([]float32) error) error {
	if len(p) == 0 {
		return nil
	}
	pcm, err := d.dec.Decode(p)
	if err != nil {
		return broken("opus", err)
	}
	drop := min(d.skip, len(pcm))
	d.skip -= drop
	if drop == len(pcm) {
		return nil
	}
	d.pending = append(d.pending, d.rs.Process(audio.Int16ToFloat32(pcm[drop:]))...)
	if len(d.pending) >= liveBatch {
		return d.flush(emit)
	}
	return nil
}

// opusHead reads OpusHead's pre-skip (RFC 7845 §5.1); mono and stereo only.
func opusHead(head []byte) (preSkip int, err error) {
	if len(head) < 19 || string(head[:8]) != "OpusHead" {
		return 0, broken("opus", errors.New("the Opus header is not OpusHead"))
	}
	if head[18] != 0 && head[18] != 1 {
		return 0, fmt.Errorf("%w: Opus channel mapping family %d", ErrUnsupported, head[18])
	}
	return int(binary.LittleEndian.Uint16(head[10:])), nil
}

// notDeclared refuses a stream whose first bytes are not the declared container, saying what
// they look like.
func notDeclared(declared string, head []byte) error {
	kind, _ := Sniff(head[:min(len(head), SniffLen)])
	if kind == "" {
		kind = "nothing voiced recognises"
	}
	return fmt.Errorf("%w: the stream was declared %s but begins like %s", ErrUnsupported, declared, kind)
}

func (d *LiveDecoder) oggFeed(emit func([]float32) error) error {
	for {
		b := d.held
		if len(b) < 27 {
			if !d.begun && len(b) >= 4 && string(b[:4]) != "OggS" {
				return notDeclared("Ogg Opus", b)
			}
			return nil
		}
		if string(b[:4]) != "OggS" || b[4] != 0 {
			if !d.begun {
				return notDeclared("Ogg Opus", b)
			}
			return broken("ogg", errors.New("lost Ogg page sync"))
		}
		d.begun = true
		need := 27 + int(b[26])
		if len(b) < need {
			return nil
		}
		size := 0
		for _, l := range b[27:need] {
			size += int(l)
		}
		if len(b) < need+size {
			return nil
		}
		h := append([]byte(nil), b[:27]...)
		if err := d.ogg.accept(h, b[27:need], b[need:need+size]); err != nil {
			return broken("ogg", err)
		}
		d.held = b[need+size:]
		packets := d.ogg.packets
		d.ogg.packets = nil
		for _, p := range packets {
			switch d.oggHeaders {
			case 0:
				d.oggHeaders++
				if len(p) >= 7 && string(p[:7]) == "\x01vorbis" {
					return fmt.Errorf("%w: Ogg Vorbis (a live door reads Ogg Opus; POST /v1/audio/transcriptions reads Vorbis files)", ErrUnsupported)
				}
				skip, err := opusHead(p)
				if err != nil {
					return err
				}
				d.skip = skip
			case 1:
				d.oggHeaders++
				if len(p) < 8 || string(p[:8]) != "OpusTags" {
					return broken("ogg", errors.New("the second packet is not OpusTags"))
				}
			default:
				if err := d.packet(p, emit); err != nil {
					return err
				}
			}
		}
	}
}

// Matroska element IDs (marker bits kept, as the specification writes them).
const (
	ebmlHeader       = 0x1A45DFA3
	mkvSegment       = 0x18538067
	mkvCluster       = 0x1F43B675
	mkvTracks        = 0x1654AE6B
	mkvTrackEntry    = 0xAE
	mkvTrackNumber   = 0xD7
	mkvCodecID       = 0x86
	mkvCodecPrivate  = 0x63A2
	mkvBlockGroup    = 0xA0
	mkvBlock         = 0xA1
	mkvSimpleBlock   = 0xA3
	mkvUnknownLength = -1
)

// webmState is the push parser's place in a WebM stream: master elements are entered (their
// children follow inline, so unknown-size Segments and Clusters — what MediaRecorder writes —
// need no end), the few leaf elements voiced reads are gathered whole, every other element is
// skipped as its bytes arrive.
type webmState struct {
	skip   int64 // bytes of an element being skipped still to come
	track  int64 // the Opus track's number; 0 until the tracks are read
	codecs []string
	cur    struct {
		open  bool
		num   int64
		codec string
		priv  []byte
	}
}

// ebmlVint reads a variable-length integer of at most maxLen bytes: its value without the
// length marker (keep: with it, as IDs are written), its length, and whether all its value bits
// are ones (an unknown size). n == 0: more bytes are needed.
func ebmlVint(b []byte, maxLen int, keep bool) (v int64, n int, allOnes bool, err error) {
	if len(b) == 0 {
		return 0, 0, false, nil
	}
	first := b[0]
	n = 1
	for mask := byte(0x80); first&mask == 0; mask >>= 1 {
		n++
		if mask == 1 {
			break
		}
	}
	if n > maxLen {
		return 0, 0, false, errors.New("a malformed EBML number")
	}
	if len(b) < n {
		return 0, 0, false, nil
	}
	marker := byte(0x80) >> (n - 1)
	v = int64(first)
	if !keep {
		v = int64(first &^ marker)
	}
	allOnes = first&^marker == marker-1
	for _, c := range b[1:n] {
		v = v<<8 | int64(c)
		allOnes = allOnes && c == 0xff
	}
	return v, n, allOnes, nil
}

// webmCommit ends the track entry being read; the first Opus one is the track decoded.
func (d *LiveDecoder) webmCommit() error {
	w := &d.webm
	if !w.cur.open {
		return nil
	}
	w.cur.open = false
	w.codecs = append(w.codecs, w.cur.codec)
	if w.track != 0 || w.cur.codec != "A_OPUS" {
		return nil
	}
	if w.cur.num <= 0 {
		return broken("webm", errors.New("an Opus track without a number"))
	}
	skip := 0
	if len(w.cur.priv) > 0 {
		var err error
		if skip, err = opusHead(w.cur.priv); err != nil {
			return err
		}
	}
	w.track, d.skip = w.cur.num, skip
	return nil
}

func (d *LiveDecoder) webmFeed(emit func([]float32) error) error {
	w := &d.webm
	for {
		if w.skip > 0 {
			n := min(int64(len(d.held)), w.skip)
			d.held = d.held[n:]
			w.skip -= n
			if w.skip > 0 {
				return nil
			}
		}
		b := d.held
		if len(b) == 0 {
			return nil
		}
		if !d.begun {
			if len(b) < 4 {
				return nil
			}
			if binary.BigEndian.Uint32(b) != ebmlHeader {
				return notDeclared("WebM", b)
			}
		}
		id, il, _, err := ebmlVint(b, 4, true)
		if err != nil {
			return broken("webm", err)
		}
		if il == 0 {
			return nil
		}
		size, sl, unknown, err := ebmlVint(b[il:], 8, false)
		if err != nil {
			return broken("webm", err)
		}
		if sl == 0 {
			return nil
		}
		if unknown {
			size = mkvUnknownLength
		}
		hdr := il + sl
		d.begun = true
		switch id {
		case mkvSegment, mkvCluster, mkvTracks, mkvBlockGroup, mkvTrackEntry:
			d.held = b[hdr:]
			if id == mkvTrackEntry || id == mkvCluster {
				if err := d.webmCommit(); err != nil {
					return err
				}
			}
			if id == mkvTrackEntry {
				w.cur.open, w.cur.num, w.cur.codec, w.cur.priv = true, 0, "", nil
			}
			if id == mkvCluster {
				if err := d.webmTrack(); err != nil {
					return err
				}
			}
			continue
		case mkvTrackNumber, mkvCodecID, mkvCodecPrivate, mkvBlock, mkvSimpleBlock:
			if size < 0 || size > maxLiveHeld {
				return broken("webm", fmt.Errorf("element %X of size %d", id, size))
			}
			if int64(len(b)) < int64(hdr)+size {
				return nil
			}
			body := b[hdr : hdr+int(size)]
			d.held = b[hdr+int(size):]
			if err := d.webmLeaf(id, body, emit); err != nil {
				return err
			}
			continue
		}
		if size < 0 {
			return broken("webm", fmt.Errorf("element %X of unknown size", id))
		}
		d.held = b[hdr:]
		w.skip = size
	}
}

func (d *LiveDecoder) webmLeaf(id int64, body []byte, emit func([]float32) error) error {
	w := &d.webm
	switch id {
	case mkvTrackNumber:
		for _, c := range body {
			w.cur.num = w.cur.num<<8 | int64(c)
		}
	case mkvCodecID:
		w.cur.codec = string(body)
	case mkvCodecPrivate:
		w.cur.priv = append([]byte(nil), body...)
	case mkvBlock, mkvSimpleBlock:
		if err := d.webmTrack(); err != nil {
			return err
		}
		track, tl, _, err := ebmlVint(body, 8, false)
		if err != nil || tl == 0 || len(body) < tl+3 {
			return broken("webm", errors.New("a block too short for its header"))
		}
		if track != w.track {
			return nil // another track (MediaRecorder's video)
		}
		if lacing := body[tl+2] >> 1 & 3; lacing != 0 {
			return fmt.Errorf("%w: laced Matroska blocks", ErrUnsupported)
		}
		return d.packet(body[tl+3:], emit)
	}
	return nil
}

// webmTrack picks the Opus track once the tracks are read (before the first cluster or block).
func (d *LiveDecoder) webmTrack() error {
	w := &d.webm
	if w.track != 0 {
		return nil
	}
	if err := d.webmCommit(); err != nil || w.track != 0 {
		return err
	}
	if len(w.codecs) == 0 {
		return broken("webm", errors.New("audio before the tracks"))
	}
	return fmt.Errorf("%w: WebM without an Opus track (its codecs: %v; POST /v1/audio/transcriptions reads other codecs)", ErrUnsupported, w.codecs)
}
