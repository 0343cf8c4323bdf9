package audio

import "testing"

// Known values from the ITU-T G.711 tables (and Sun's g711.c, which the G.191 tools carry).
func TestG711KnownValues(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		code byte
		lin  int16
		dec  func(byte) int16
	}{
		"μ-law 0xFF is +0":           {0xff, 0, MulawDecode},
		"μ-law 0x7F is -0":           {0x7f, 0, MulawDecode},
		"μ-law 0x80 is +max":         {0x80, 32124, MulawDecode},
		"μ-law 0x00 is -max":         {0x00, -32124, MulawDecode},
		"μ-law 0xFE is +8":           {0xfe, 8, MulawDecode},
		"μ-law 0xEF opens segment 1": {0xef, 132, MulawDecode},
		"A-law 0xD5 is +8":           {0xd5, 8, AlawDecode},
		"A-law 0x55 is -8":           {0x55, -8, AlawDecode},
		"A-law 0xAA is +max":         {0xaa, 32256, AlawDecode},
		"A-law 0x2A is -max":         {0x2a, -32256, AlawDecode},
	} {
		t.Run(name, func(t *testing.T) {
			if got := c.dec(c.code); got != c.lin {
				t.Fatalf("decode(0x%02x) = %d, want %d", c.code, got, c.lin)
			}
		})
	}
	for name, c := range map[string]struct {
		lin  int16
		code byte
		enc  func(int16) byte
	}{
		"μ-law 0":                            {0, 0xff, MulawEncode},
		"μ-law -1 (first negative step, -8)": {-1, 0x7e, MulawEncode},
		"μ-law +max":                         {32767, 0x80, MulawEncode},
		"μ-law -max":                         {-32768, 0x00, MulawEncode},
		"A-law 0":                            {0, 0xd5, AlawEncode},
		"A-law -1":                           {-1, 0x55, AlawEncode},
		"A-law +max":                         {32767, 0xaa, AlawEncode},
		"A-law -max":                         {-32768, 0x2a, AlawEncode},
		"A-law 1000":                         {1000, 0xfa, AlawEncode},
		"μ-law 1000":                         {1000, 0xce, MulawEncode},
	} {
		t.Run(name, func(t *testing.T) {
			if got := c.enc(c.lin); got != c.code {
				t.Fatalf("encode(%d) = 0x%02x, want 0x%02x", c.lin, got, c.code)
			}
		})
	}
}

// Every code decodes to a value that encodes back to the same code (μ-law's negative zero 0x7F
// excepted: it decodes to 0, which encodes as 0xFF), and every 16-bit sample survives
// encode→decode within half a quantisation step of its segment.
func TestG711RoundTrip(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		enc func(int16) byte
		dec func(byte) int16
		max int
	}{
		"μ-law": {MulawEncode, MulawDecode, 32124},
		"A-law": {AlawEncode, AlawDecode, 32256},
	} {
		t.Run(name, func(t *testing.T) {
			for b := 0; b < 256; b++ {
				if name == "μ-law" && b == 0x7f {
					continue
				}
				if got := c.enc(c.dec(byte(b))); got != byte(b) {
					t.Fatalf("encode(decode(0x%02x)) = 0x%02x", b, got)
				}
			}
			worst := 0.0
			for v := -32768; v <= 32767; v++ {
				got := int(c.dec(c.enc(int16(v))))
				target := min(max(v, -c.max), c.max)
				err := got - target
				if err < 0 {
					err = -err
				}
				// Steps double each segment: the error stays under 1/32 of the magnitude plus
				// half the finest step (8 for μ-law's 14-bit, 8 for A-law's 13-bit input).
				mag := target
				if mag < 0 {
					mag = -mag
				}
				bound := float64(mag)/32 + 8
				if float64(err) > bound {
					t.Fatalf("decode(encode(%d)) = %d, error %d > %.1f", v, got, err, bound)
				}
				if r := float64(err) / (float64(mag) + 1); mag > 1000 && r > worst {
					worst = r
				}
			}
			t.Logf("worst relative error above |x|>1000: %.4f", worst)
		})
	}
}

func TestG711Slices(t *testing.T) {
	t.Parallel()
	s := []int16{0, 1000, -1000, 32767, -32768}
	if got := MulawToInt16(Int16ToMulaw(s)); len(got) != len(s) || got[1] != MulawDecode(MulawEncode(1000)) {
		t.Fatalf("μ-law slices: %v", got)
	}
	if got := AlawToInt16(Int16ToAlaw(s)); len(got) != len(s) || got[2] != AlawDecode(AlawEncode(-1000)) {
		t.Fatalf("A-law slices: %v", got)
	}
}

func BenchmarkMulawEncode(b *testing.B) {
	s := make([]int16, 24000)
	for i := range s {
		s[i] = int16(i * 7)
	}
	b.SetBytes(int64(len(s) * 2))
	for b.Loop() {
		Int16ToMulaw(s)
	}
}
