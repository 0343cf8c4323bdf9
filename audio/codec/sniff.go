package codec

import (
	"bytes"
	"encoding/binary"
)

// Kinds of upload Sniff recognises. Readable ones first; the rest are named only so a refusal
// can say what was sent.
const (
	KindWAV       = "wav"
	KindFLAC      = "flac"
	KindMP3       = "mp3"
	KindOggOpus   = "ogg/opus"
	KindOggVorbis = "ogg/vorbis"
	KindMP4       = "mp4"  // MP4/M4A/MOV (ISO base media): AAC, ALAC, Opus, … whatever ffmpeg reads
	KindWebM      = "webm" // WebM/Matroska (MediaRecorder's Opus)
	KindADTS      = "aac"  // ADTS AAC
)

// SniffLen is how many leading bytes Sniff wants (fewer is fine for a short file).
const SniffLen = 64

// Sniff names an upload's format from its first bytes. readable is false for what voiced does not
// decode; kind is then a description for the refusal ("" when nothing is recognised).
func Sniff(head []byte) (kind string, readable bool) {
	has := func(off int, magic string) bool {
		return len(head) >= off+len(magic) && string(head[off:off+len(magic)]) == magic
	}
	switch {
	case has(0, "RIFF") && has(8, "WAVE"), has(0, "RIFX"), has(0, "RF64"):
		return KindWAV, true
	case has(0, "fLaC"):
		return KindFLAC, true
	case has(0, "OggS"):
		// The first page holds the codec's identification packet: 27-byte header, the lacing
		// table, then the packet.
		if len(head) < 27 {
			return "truncated ogg", false
		}
		body := 27 + int(head[26])
		switch {
		case has(body, "OpusHead"):
			return KindOggOpus, true
		case has(body, "\x01vorbis"):
			return KindOggVorbis, true
		case has(body, "\x7fFLAC"):
			return "ogg/flac", false
		case has(body, "Speex   "):
			return "ogg/speex", false
		case has(body, "\x80theora"):
			return "ogg/theora (video)", false
		}
		return "ogg (unknown codec)", false
	case has(4, "ftyp"):
		return KindMP4, true
	case has(0, "\x1a\x45\xdf\xa3"):
		return KindWebM, true
	case has(0, "ID3"):
		// An ID3v2 tag precedes an mp3 (rarely a FLAC or AAC stream, which the mp3 decoder then
		// refuses as broken).
		return KindMP3, true
	case isMP3Frame(head):
		return KindMP3, true
	case isADTS(head):
		return KindADTS, true
	case has(0, "\x89PNG"):
		return "PNG image", false
	case has(0, "\xff\xd8\xff"):
		return "JPEG image", false
	case has(0, "GIF8"):
		return "GIF image", false
	case has(0, "%PDF"):
		return "PDF document", false
	case has(0, "PK\x03\x04"):
		return "ZIP archive", false
	case has(0, "FORM") && (has(8, "AIFF") || has(8, "AIFC")):
		return "AIFF", false
	case has(0, "#!AMR"):
		return "AMR", false
	case has(0, ".snd"):
		return "Sun/NeXT audio", false
	case has(0, "MThd"):
		return "MIDI", false
	case bytes.HasPrefix(head, []byte("{")), bytes.HasPrefix(head, []byte("<")):
		return "text", false
	}
	return "", false
}

// isMP3Frame: an MPEG audio layer III frame header (11 sync bits, version not reserved, layer
// III, bitrate index neither free nor bad, sample rate not reserved).
func isMP3Frame(h []byte) bool {
	if len(h) < 4 {
		return false
	}
	v := binary.BigEndian.Uint32(h)
	return v>>21 == 0x7ff && (v>>19)&3 != 1 && (v>>17)&3 == 1 && (v>>12)&15 != 0 && (v>>12)&15 != 15 && (v>>10)&3 != 3
}

// isADTS: an ADTS header (12 sync bits, layer 0).
func isADTS(h []byte) bool {
	return len(h) >= 7 && h[0] == 0xff && h[1]&0xf6 == 0xf0
}
