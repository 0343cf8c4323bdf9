package audio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// wavFile builds a RIFF/WAVE file from chunks; riffSize < 0 computes the right size.
type chunk struct {
	id   string
	body []byte
	size int64 // declared size; -1 means len(body)
}

func riff(chunks ...chunk) []byte {
	var b []byte
	b = append(b, "RIFF\x00\x00\x00\x00WAVE"...)
	for _, c := range chunks {
		b = append(b, c.id...)
		size := uint32(len(c.body))
		if c.size >= 0 {
			size = uint32(c.size)
		}
		b = binary.LittleEndian.AppendUint32(b, size)
		b = append(b, c.body...)
		if len(c.body)%2 == 1 {
			b = append(b, 0)
		}
	}
	binary.LittleEndian.PutUint32(b[4:], uint32(len(b)-8))
	return b
}

func fmtBody(tag, channels, rate, bits int) []byte {
	le := binary.LittleEndian
	align := channels * bits / 8
	b := le.AppendUint16(nil, uint16(tag))
	b = le.AppendUint16(b, uint16(channels))
	b = le.AppendUint32(b, uint32(rate))
	b = le.AppendUint32(b, uint32(rate*align))
	b = le.AppendUint16(b, uint16(align))
	return le.AppendUint16(b, uint16(bits))
}

func extensibleBody(subTag, channels, rate, bits, validBits int, tail []byte) []byte {
	le := binary.LittleEndian
	b := fmtBody(wavFormatExtensible, channels, rate, bits)
	b = le.AppendUint16(b, 22)
	b = le.AppendUint16(b, uint16(validBits))
	b = le.AppendUint32(b, 3)
	b = le.AppendUint16(b, uint16(subTag))
	return append(b, tail...)
}

func fmtChunk(body []byte) chunk      { return chunk{"fmt ", body, -1} }
func dataChunk(body []byte) chunk     { return chunk{"data", body, -1} }
func sized(c chunk, size int64) chunk { c.size = size; return c }

func le16(v ...int16) []byte { return Int16ToBytes(v) }

func f32bytes(v ...float32) []byte {
	var b []byte
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

func TestDecodeWAV(t *testing.T) {
	t.Parallel()
	le := binary.LittleEndian
	for name, c := range map[string]struct {
		file []byte
		want []float32
		rate int
	}{
		"pcm16 mono": {riff(fmtChunk(fmtBody(1, 1, 16000, 16)), dataChunk(le16(0, 16384, -32768))),
			[]float32{0, 0.5, -1}, 16000},
		"pcm8 mono": {riff(fmtChunk(fmtBody(1, 1, 8000, 8)), dataChunk([]byte{128, 192, 0, 255})),
			[]float32{0, 0.5, -1, 127.0 / 128}, 8000},
		"pcm24 mono": {riff(fmtChunk(fmtBody(1, 1, 48000, 24)), dataChunk([]byte{0, 0, 0x40, 0, 0, 0x80, 0xff, 0xff, 0xff})),
			[]float32{0.5, -1, -1.0 / (1 << 23)}, 48000},
		"pcm32 mono": {riff(fmtChunk(fmtBody(1, 1, 44100, 32)), dataChunk(le.AppendUint32(le.AppendUint32(nil, 1<<30), 1<<31))),
			[]float32{0.5, -1}, 44100},
		"float32 mono": {riff(fmtChunk(fmtBody(3, 1, 24000, 32)), dataChunk(f32bytes(0.25, -0.75))),
			[]float32{0.25, -0.75}, 24000},
		"float32 NaN and Inf become 0": {riff(fmtChunk(fmtBody(3, 1, 24000, 32)), dataChunk(f32bytes(float32(math.NaN()), float32(math.Inf(1)), 0.5))),
			[]float32{0, 0, 0.5}, 24000},
		"float64 mono": {riff(fmtChunk(fmtBody(3, 1, 22050, 64)), dataChunk(le.AppendUint64(nil, math.Float64bits(-0.125)))),
			[]float32{-0.125}, 22050},
		"μ-law": {riff(fmtChunk(fmtBody(7, 1, 8000, 8)), dataChunk([]byte{0xff, 0x80})),
			[]float32{0, 32124.0 / 32768}, 8000},
		"A-law": {riff(fmtChunk(fmtBody(6, 1, 8000, 8)), dataChunk([]byte{0xd5, 0x2a})),
			[]float32{8.0 / 32768, -32256.0 / 32768}, 8000},
		"stereo averaged": {riff(fmtChunk(fmtBody(1, 2, 44100, 16)), dataChunk(le16(16384, 0, -16384, -16384))),
			[]float32{0.25, -0.5}, 44100},
		"six channels averaged": {riff(fmtChunk(fmtBody(1, 6, 48000, 16)), dataChunk(le16(6*1024, 0, 0, 0, 0, 0))),
			[]float32{1024.0 / 32768}, 48000},
		"extensible pcm16": {riff(fmtChunk(extensibleBody(1, 1, 16000, 16, 16, ksDataFormatTail)), dataChunk(le16(8192))),
			[]float32{0.25}, 16000},
		"extensible float": {riff(fmtChunk(extensibleBody(3, 2, 48000, 32, 32, ksDataFormatTail)), dataChunk(f32bytes(0.5, 0.25))),
			[]float32{0.375}, 48000},
		"extensible 24 valid bits in 32": {riff(fmtChunk(extensibleBody(1, 1, 96000, 32, 24, ksDataFormatTail)), dataChunk(le.AppendUint32(nil, 0xc0000000))),
			[]float32{-0.5}, 96000},
		"unknown odd chunk with pad byte before fmt": {riff(chunk{"junk", []byte{1, 2, 3}, -1}, fmtChunk(fmtBody(1, 1, 16000, 16)), chunk{"LIST", []byte("xyzab"), -1}, dataChunk(le16(-16384))),
			[]float32{-0.5}, 16000},
		"chunks after data ignored": {riff(fmtChunk(fmtBody(1, 1, 16000, 16)), dataChunk(le16(1, 2)), chunk{"LIST", []byte("info"), -1}),
			[]float32{1.0 / 32768, 2.0 / 32768}, 16000},
		"streamed data size 0xFFFFFFFF": {riff(fmtChunk(fmtBody(1, 1, 24000, 16)), sized(dataChunk(le16(100, 200, 300)), 0xffffffff)),
			[]float32{100.0 / 32768, 200.0 / 32768, 300.0 / 32768}, 24000},
		"streamed header from WAVHeader": {append(WAVHeader(24000, 1, 16, UnknownLength), le16(7, -7)...),
			[]float32{7.0 / 32768, -7.0 / 32768}, 24000},
	} {
		t.Run(name, func(t *testing.T) {
			got, rate, err := DecodeWAV(bytes.NewReader(c.file))
			if err != nil {
				t.Fatal(err)
			}
			if rate != c.rate {
				t.Errorf("rate = %d, want %d", rate, c.rate)
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %d samples %v, want %v", len(got), got, c.want)
			}
			for i := range got {
				if math.Abs(float64(got[i]-c.want[i])) > 1e-7 {
					t.Fatalf("sample %d = %v, want %v", i, got[i], c.want[i])
				}
			}
		})
	}
}

func TestDecodeWAVErrors(t *testing.T) {
	t.Parallel()
	good := fmtChunk(fmtBody(1, 1, 16000, 16))
	badGUID := append([]byte(nil), ksDataFormatTail...)
	badGUID[5] ^= 1
	for name, c := range map[string]struct {
		file []byte
		want error
	}{
		"empty input":             {nil, ErrWAVHeader},
		"not RIFF":                {[]byte("RIFX\x00\x00\x00\x00WAVEfmt "), ErrWAVHeader},
		"not WAVE":                {[]byte("RIFF\x04\x00\x00\x00AVI "), ErrWAVHeader},
		"no chunks":               {riff(), ErrWAVHeader},
		"no data chunk":           {riff(good), ErrWAVHeader},
		"data before fmt":         {riff(dataChunk(le16(1)), good), ErrWAVHeader},
		"short fmt":               {riff(fmtChunk(fmtBody(1, 1, 16000, 16)[:14]), dataChunk(le16(1))), ErrWAVHeader},
		"two fmt chunks":          {riff(good, good, dataChunk(le16(1))), ErrWAVHeader},
		"zero channels":           {riff(fmtChunk(fmtBody(1, 0, 16000, 16)), dataChunk(le16(1))), ErrWAVHeader},
		"zero rate":               {riff(fmtChunk(fmtBody(1, 1, 0, 16)), dataChunk(le16(1))), ErrRate},
		"absurd rate":             {riff(fmtChunk(fmtBody(1, 1, 1<<30, 16)), dataChunk(le16(1))), ErrRate},
		"block align lies":        {riff(fmtChunk(func() []byte { b := fmtBody(1, 2, 16000, 16); b[12] = 2; return b }()), dataChunk(le16(1, 2))), ErrWAVHeader},
		"short extensible":        {riff(fmtChunk(extensibleBody(1, 1, 16000, 16, 16, ksDataFormatTail)[:30]), dataChunk(le16(1))), ErrWAVHeader},
		"ADPCM":                   {riff(fmtChunk(fmtBody(2, 1, 16000, 4)), dataChunk([]byte{1, 2})), ErrWAVEncoding},
		"IMA ADPCM":               {riff(fmtChunk(fmtBody(0x11, 1, 8000, 4)), dataChunk([]byte{1, 2})), ErrWAVEncoding},
		"MP3 in WAV":              {riff(fmtChunk(fmtBody(0x55, 2, 44100, 0)), dataChunk([]byte{1, 2})), ErrWAVEncoding},
		"12-bit PCM":              {riff(fmtChunk(fmtBody(1, 1, 16000, 12)), dataChunk([]byte{1, 2})), ErrWAVEncoding},
		"float16":                 {riff(fmtChunk(fmtBody(3, 1, 16000, 16)), dataChunk([]byte{1, 2})), ErrWAVEncoding},
		"extensible foreign GUID": {riff(fmtChunk(extensibleBody(1, 1, 16000, 16, 16, badGUID)), dataChunk(le16(1))), ErrWAVEncoding},
		"extensible ADPCM":        {riff(fmtChunk(extensibleBody(2, 1, 16000, 16, 16, ksDataFormatTail)), dataChunk(le16(1))), ErrWAVEncoding},
		"data size past end":      {riff(good, sized(dataChunk(le16(1, 2)), 400)), ErrWAVTruncated},
		"data ends mid-frame":     {riff(good, dataChunk([]byte{1, 2, 3})), ErrWAVTruncated},
		"chunk size past end":     {riff(sized(chunk{"LIST", []byte("ab"), -1}, 1<<31)), ErrWAVTruncated},
		"cut inside chunk header": {append(riff(good), 'd', 'a', 't'), ErrWAVTruncated},
		"empty data":              {riff(good, dataChunk(nil)), ErrWAVEmpty},
		"empty streamed data":     {WAVHeader(16000, 1, 16, UnknownLength), ErrWAVEmpty},
	} {
		t.Run(name, func(t *testing.T) {
			got, _, err := DecodeWAVBytes(c.file)
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			if got != nil {
				t.Fatalf("samples returned with an error: %v", got)
			}
		})
	}
}

func TestEncodeWAVRoundTrip(t *testing.T) {
	t.Parallel()
	pcm := []int16{0, 1, -1, 32767, -32768, 1234}
	var buf bytes.Buffer
	if err := EncodeWAV(&buf, pcm, 24000); err != nil {
		t.Fatal(err)
	}
	if buf.Len() != 44+2*len(pcm) {
		t.Fatalf("file is %d bytes", buf.Len())
	}
	if got := binary.LittleEndian.Uint32(buf.Bytes()[4:]); got != uint32(36+2*len(pcm)) {
		t.Fatalf("RIFF size %d", got)
	}
	f, rate, err := DecodeWAV(&buf)
	if err != nil || rate != 24000 {
		t.Fatalf("decode: rate %d, %v", rate, err)
	}
	back := Float32ToInt16(f)
	for i := range pcm {
		if back[i] != pcm[i] {
			t.Fatalf("sample %d: %d != %d", i, back[i], pcm[i])
		}
	}
}

func TestWAVHeader(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		rate, channels, bits, data int
		riffSize, dataSize         uint32
	}{
		"known length":         {16000, 1, 16, 32000, 32036, 32000},
		"odd length pads RIFF": {8000, 1, 8, 3, 40, 3},
		"unknown length":       {24000, 1, 16, UnknownLength, 0xffffffff, 0xffffffff},
		"past 4 GiB":           {48000, 2, 16, 1 << 33, 0xffffffff, 0xffffffff},
	} {
		t.Run(name, func(t *testing.T) {
			h := WAVHeader(c.rate, c.channels, c.bits, c.data)
			le := binary.LittleEndian
			if len(h) != 44 || string(h[0:4]) != "RIFF" || string(h[8:16]) != "WAVEfmt " || string(h[36:40]) != "data" {
				t.Fatalf("header % x", h)
			}
			if le.Uint32(h[4:]) != c.riffSize || le.Uint32(h[40:]) != c.dataSize {
				t.Fatalf("sizes %d/%d, want %d/%d", le.Uint32(h[4:]), le.Uint32(h[40:]), c.riffSize, c.dataSize)
			}
			if int(le.Uint32(h[24:])) != c.rate || int(le.Uint16(h[22:])) != c.channels || int(le.Uint16(h[34:])) != c.bits ||
				int(le.Uint32(h[28:])) != c.rate*c.channels*c.bits/8 || int(le.Uint16(h[32:])) != c.channels*c.bits/8 {
				t.Fatalf("fmt fields % x", h[20:36])
			}
		})
	}
}

func TestDecodeJFK(t *testing.T) {
	t.Parallel()
	path := sharedData(t, "whisper", "jfk.wav")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pcm, rate, err := DecodeWAV(f)
	if err != nil {
		t.Fatal(err)
	}
	if rate != 16000 || len(pcm) < 16000*10 || len(pcm) > 16000*12 {
		t.Fatalf("jfk.wav: %d samples at %d Hz, want about 11 s at 16 kHz", len(pcm), rate)
	}
	if db := DBFS(pcm); db < -40 || db > -6 {
		t.Fatalf("jfk.wav level %.1f dBFS", db)
	}
	t.Logf("jfk.wav: %d samples, %v, %.1f dBFS", len(pcm), Duration(len(pcm), rate), DBFS(pcm))
}

// sharedData returns a file under $VOICED_SHARED_DATA, skipping the test when it is absent.
func sharedData(t testing.TB, parts ...string) string {
	t.Helper()
	dir := os.Getenv("VOICED_SHARED_DATA")
	if dir == "" {
		t.Skip("VOICED_SHARED_DATA is not set: reference-data test skipped (run through `make test` or `eval \"$(make -s env)\"`)")
	}
	path := filepath.Join(append([]string{dir}, parts...)...)
	if _, err := os.Stat(path); err != nil {
		t.Skipf("reference file %s is absent (VOICED_SHARED_DATA): %v", path, err)
	}
	return path
}

func FuzzDecodeWAV(f *testing.F) {
	f.Add(riff(fmtChunk(fmtBody(1, 1, 16000, 16)), dataChunk(le16(0, 16384, -32768))))
	f.Add(riff(fmtChunk(fmtBody(1, 2, 44100, 24)), dataChunk(make([]byte, 12))))
	f.Add(riff(fmtChunk(fmtBody(3, 1, 24000, 32)), dataChunk(f32bytes(0.25))))
	f.Add(riff(fmtChunk(extensibleBody(1, 1, 16000, 16, 16, ksDataFormatTail)), dataChunk(le16(8192))))
	f.Add(riff(chunk{"junk", []byte{1, 2, 3}, -1}, fmtChunk(fmtBody(7, 1, 8000, 8)), dataChunk([]byte{1, 2, 3})))
	f.Add(append(WAVHeader(24000, 1, 16, UnknownLength), le16(7, -7)...))
	f.Add(riff(fmtChunk(fmtBody(1, 1, 16000, 16)), sized(dataChunk(le16(1)), 1<<31)))
	f.Fuzz(func(t *testing.T, b []byte) {
		pcm, rate, err := DecodeWAVBytes(b)
		if err != nil {
			if pcm != nil {
				t.Fatal("samples with an error")
			}
			for _, want := range []error{ErrWAVHeader, ErrWAVEncoding, ErrWAVTruncated, ErrWAVEmpty, ErrRate} {
				if errors.Is(err, want) {
					return
				}
			}
			t.Fatalf("unnamed error %v", err)
		}
		if len(pcm) == 0 || len(pcm) > len(b) {
			t.Fatalf("%d samples from %d bytes", len(pcm), len(b))
		}
		if rate < MinRate || rate > MaxRate {
			t.Fatalf("rate %d", rate)
		}
		// Read a few frames at a time, the stream gives the same samples.
		st, err := OpenWAV(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatalf("DecodeWAVBytes read it, OpenWAV: %v", err)
		}
		var blocks []float32
		for {
			block, err := st.Next(3)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			blocks = append(blocks, block...)
		}
		if !slices.Equal(blocks, pcm) || st.Frames() != int64(len(pcm)) {
			t.Fatalf("in blocks: %d samples (Frames %d), whole: %d", len(blocks), st.Frames(), len(pcm))
		}
		for _, v := range pcm {
			if v != v || math.IsInf(float64(v), 0) { // float WAVs may exceed ±1; never NaN or Inf
				t.Fatalf("non-finite sample %v", v)
			}
		}
	})
}

func BenchmarkDecodeWAV16kMono30s(b *testing.B) {
	pcm := make([]int16, WhisperSamples)
	for i := range pcm {
		pcm[i] = int16(i * 31)
	}
	var buf bytes.Buffer
	if err := EncodeWAV(&buf, pcm, 16000); err != nil {
		b.Fatal(err)
	}
	file := buf.Bytes()
	b.SetBytes(int64(len(file)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := DecodeWAVBytes(file); err != nil {
			b.Fatal(err)
		}
	}
}

// espeak-ng --stdout cannot seek, so it writes 0x7FFFF000 as the data size; such a stream is read
// to its end, and a trailing half frame is dropped. A file declaring a little more than it holds
// is still truncated.
func TestDecodeWAVStreamedPlaceholder(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := EncodeWAV(&buf, []int16{100, -200, 300}, 22050); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	i := bytes.Index(b, []byte("data"))
	for name, size := range map[string]uint32{"espeak": 0x7FFFF000, "ffmpeg": 0xFFFFFFFF} {
		c := append([]byte(nil), b...)
		binary.LittleEndian.PutUint32(c[i+4:], size)
		c = append(c, 0x7F) // half a frame
		got, rate, err := DecodeWAVBytes(c)
		if err != nil || rate != 22050 || len(got) != 3 {
			t.Fatalf("%s: got %d samples at %d, %v; want 3 at 22050", name, len(got), rate, err)
		}
	}
	c := append([]byte(nil), b...)
	binary.LittleEndian.PutUint32(c[i+4:], 10)
	if _, _, err := DecodeWAVBytes(c); !errors.Is(err, ErrWAVTruncated) {
		t.Fatalf("declared 10 bytes, 6 present: %v, want ErrWAVTruncated", err)
	}
}
