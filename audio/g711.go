package audio

// ITU-T G.711 μ-law and A-law, bit-exact with the reference implementation (Sun Microsystems'
// g711.c, as in the ITU-T G.191 software tools): encoders take 16-bit linear PCM and drop the
// bits G.711 does not carry (2 for μ-law's 14-bit input, 3 for A-law's 13-bit), decoders return
// the centre of each quantisation interval scaled back to 16 bits.

const (
	g711SignBit   = 0x80
	g711QuantMask = 0x0f
	g711SegShift  = 4
	g711SegMask   = 0x70
	mulawBias     = 0x84 // 132, added before the segment search
	mulawClip     = 8159 // largest 14-bit magnitude μ-law encodes
)

var (
	mulawSegEnd = [8]int{0x3f, 0x7f, 0xff, 0x1ff, 0x3ff, 0x7ff, 0xfff, 0x1fff}
	alawSegEnd  = [8]int{0x1f, 0x3f, 0x7f, 0xff, 0x1ff, 0x3ff, 0x7ff, 0xfff}

	mulawTable = func() (t [256]int16) {
		for i := range t {
			t[i] = mulawDecode(byte(i))
		}
		return t
	}()
	alawTable = func() (t [256]int16) {
		for i := range t {
			t[i] = alawDecode(byte(i))
		}
		return t
	}()
)

func segment(v int, ends *[8]int) int {
	for i, e := range ends {
		if v <= e {
			return i
		}
	}
	return 8
}

// MulawEncode encodes one 16-bit sample as a μ-law byte.
func MulawEncode(pcm int16) byte {
	v := int(pcm) >> 2
	mask := byte(0xff)
	if v < 0 {
		v = -v
		mask = 0x7f
	}
	if v > mulawClip {
		v = mulawClip
	}
	v += mulawBias >> 2
	seg := segment(v, &mulawSegEnd)
	if seg >= 8 {
		return 0x7f ^ mask
	}
	u := byte(seg<<4) | byte((v>>(seg+1))&g711QuantMask)
	return u ^ mask
}

// MulawDecode decodes one μ-law byte to a 16-bit sample.
func MulawDecode(u byte) int16 { return mulawTable[u] }

func mulawDecode(u byte) int16 {
	u = ^u
	t := (int(u&g711QuantMask) << 3) + mulawBias
	t <<= (u & g711SegMask) >> g711SegShift
	if u&g711SignBit != 0 {
		return int16(mulawBias - t)
	}
	return int16(t - mulawBias)
}

// AlawEncode encodes one 16-bit sample as an A-law byte (even bits inverted, as sent on the line).
func AlawEncode(pcm int16) byte {
	v := int(pcm) >> 3
	mask := byte(0xd5)
	if v < 0 {
		mask = 0x55
		v = -v - 1
	}
	seg := segment(v, &alawSegEnd)
	if seg >= 8 {
		return 0x7f ^ mask
	}
	a := byte(seg << g711SegShift)
	if seg < 2 {
		a |= byte((v >> 1) & g711QuantMask)
	} else {
		a |= byte((v >> seg) & g711QuantMask)
	}
	return a ^ mask
}

// AlawDecode decodes one A-law byte to a 16-bit sample.
func AlawDecode(a byte) int16 { return alawTable[a] }

func alawDecode(a byte) int16 {
	a ^= 0x55
	t := int(a&g711QuantMask) << 4
	switch seg := (a & g711SegMask) >> g711SegShift; seg {
	case 0:
		t += 8
	case 1:
		t += 0x108
	default:
		t += 0x108
		t <<= seg - 1
	}
	if a&g711SignBit != 0 {
		return int16(t)
	}
	return int16(-t)
}

// MulawToInt16 decodes μ-law bytes.
func MulawToInt16(b []byte) []int16 {
	out := make([]int16, len(b))
	for i, u := range b {
		out[i] = mulawTable[u]
	}
	return out
}

// Int16ToMulaw encodes samples as μ-law bytes.
func Int16ToMulaw(s []int16) []byte {
	out := make([]byte, len(s))
	for i, v := range s {
		out[i] = MulawEncode(v)
	}
	return out
}

// AlawToInt16 decodes A-law bytes.
func AlawToInt16(b []byte) []int16 {
	out := make([]int16, len(b))
	for i, a := range b {
		out[i] = alawTable[a]
	}
	return out
}

// Int16ToAlaw encodes samples as A-law bytes.
func Int16ToAlaw(s []int16) []byte {
	out := make([]byte, len(s))
	for i, v := range s {
		out[i] = AlawEncode(v)
	}
	return out
}
