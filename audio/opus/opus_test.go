package opus

import (
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/voiced/voiced/audio"
)

// speech48k is silero-vad-go's recording (float32 LE, 16 kHz) resampled to 48 kHz, as int16.
func speech48k(t testing.TB) []int16 {
	t.Helper()
	dir := os.Getenv("VOICED_SILERO_TESTFILES")
	if dir == "" {
		t.Skip("VOICED_SILERO_TESTFILES unset: run through make or eval \"$(make -s env)\"")
	}
	data, err := os.ReadFile(filepath.Join(dir, "samples.pcm"))
	if err != nil {
		t.Fatal(err)
	}
	pcm := make([]float32, len(data)/4)
	for i := range pcm {
		pcm[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
	}
	return audio.Float32ToInt16(audio.Resample(pcm, 16000, SampleRate))
}

// bestCorrelation is the highest normalized correlation of b against a over lags 0..maxLag
// (Opus delays its output by its lookahead).
func bestCorrelation(a, b []int16, maxLag int) (float64, int) {
	best, bestLag := -1.0, 0
	for lag := 0; lag <= maxLag; lag++ {
		var ab, aa, bb float64
		for i := 0; i+lag < len(b) && i < len(a); i++ {
			x, y := float64(a[i]), float64(b[i+lag])
			ab += x * y
			aa += x * x
			bb += y * y
		}
		if aa == 0 || bb == 0 {
			continue
		}
		if c := ab / math.Sqrt(aa*bb); c > best {
			best, bestLag = c, lag
		}
	}
	return best, bestLag
}

func roundTrip(t *testing.T, pcm []int16, lose func(i int) bool) []int16 {
	t.Helper()
	enc, err := NewEncoder(32000)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	dec, err := NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	var out []int16
	for i := 0; (i+1)*FrameSamples <= len(pcm); i++ {
		pkt, err := enc.Encode(pcm[i*FrameSamples : (i+1)*FrameSamples])
		if err != nil {
			t.Fatal(err)
		}
		if lose != nil && lose(i) {
			pkt = nil
		}
		frame, err := dec.Decode(pkt)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if len(frame) != FrameSamples {
			t.Fatalf("frame %d: %d samples, want %d", i, len(frame), FrameSamples)
		}
		out = append(out, frame...)
	}
	return out
}

func TestRoundTripKeepsSpeech(t *testing.T) {
	pcm := speech48k(t)
	out := roundTrip(t, pcm, nil)
	c, lag := bestCorrelation(pcm, out, 1000)
	t.Logf("correlation %.3f at lag %d samples", c, lag)
	if c < 0.9 {
		t.Fatalf("decoded speech correlates %.3f with the original, want >= 0.9", c)
	}
}

func TestConcealmentFillsLostFrames(t *testing.T) {
	pcm := speech48k(t)
	// Lose every 10th frame: PLC fills it with a frame of the right length, and the whole
	// still correlates with the original (less than a clean round trip).
	out := roundTrip(t, pcm, func(i int) bool { return i%10 == 5 })
	if len(out) != len(pcm)/FrameSamples*FrameSamples {
		t.Fatalf("%d samples out, want %d", len(out), len(pcm)/FrameSamples*FrameSamples)
	}
	c, _ := bestCorrelation(pcm, out, 1000)
	t.Logf("correlation with 10%% loss concealed: %.3f", c)
	if c < 0.7 {
		t.Fatalf("concealed speech correlates %.3f, want >= 0.7", c)
	}
	// A concealed frame after speech is not silence.
	dec, _ := NewDecoder()
	defer dec.Close()
	enc, _ := NewEncoder(32000)
	defer enc.Close()
	loud := 100 // a frame index inside speech
	for i := loud - 20; i < loud; i++ {
		pkt, _ := enc.Encode(pcm[i*FrameSamples : (i+1)*FrameSamples])
		if _, err := dec.Decode(pkt); err != nil {
			t.Fatal(err)
		}
	}
	plc, err := dec.Decode(nil)
	if err != nil {
		t.Fatal(err)
	}
	if rms := audio.RMS(audio.Int16ToFloat32(plc)); rms == 0 {
		t.Fatal("concealed frame is silence")
	}
}

func TestFECRecoversLostFrame(t *testing.T) {
	pcm := speech48k(t)
	enc, _ := NewEncoder(32000)
	defer enc.Close()
	dec, _ := NewDecoder()
	defer dec.Close()
	var pkts [][]byte
	for i := 0; i < 120; i++ {
		p, err := enc.Encode(pcm[i*FrameSamples : (i+1)*FrameSamples])
		if err != nil {
			t.Fatal(err)
		}
		pkts = append(pkts, append([]byte(nil), p...))
	}
	for i := 0; i < 100; i++ {
		if _, err := dec.Decode(pkts[i]); err != nil {
			t.Fatal(err)
		}
	}
	// Packet 100 is lost: recover it from 101's FEC.
	rec, err := dec.DecodeFEC(pkts[101])
	if err != nil {
		t.Fatal(err)
	}
	if len(rec) != FrameSamples {
		t.Fatalf("FEC frame has %d samples, want %d", len(rec), FrameSamples)
	}
}

func TestBadPacketsRefusedByName(t *testing.T) {
	dec, err := NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	// Code 3 (arbitrary frame count) with a frame count of 0 is invalid (RFC 6716 §3.2.5).
	if _, err := dec.Decode([]byte{0x03, 0x00}); !errors.Is(err, ErrBadPacket) {
		t.Fatalf("code-3 packet with 0 frames: %v, want ErrBadPacket", err)
	}
	if _, err := dec.Decode([]byte{}); !errors.Is(err, ErrEmptyPacket) {
		t.Fatalf("empty packet: %v, want ErrEmptyPacket", err)
	}
	enc, _ := NewEncoder(0)
	defer enc.Close()
	if _, err := enc.Encode(make([]int16, 480)); !errors.Is(err, ErrFrameSize) {
		t.Fatalf("10 ms frame: %v, want ErrFrameSize", err)
	}
	enc.Close()
	if _, err := enc.Encode(make([]int16, FrameSamples)); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v, want ErrClosed", err)
	}
}

// BenchmarkFrame is one 20 ms frame through what a WebRTC call does: decode the mic packet and
// resample 48k->16k, resample a 24 kHz reply frame 24k->48k and encode it.
func BenchmarkFrame(b *testing.B) {
	pcm := speech48k(b)
	enc, _ := NewEncoder(32000)
	defer enc.Close()
	var pkts [][]byte
	for i := 0; (i+1)*FrameSamples <= len(pcm); i++ {
		p, _ := enc.Encode(pcm[i*FrameSamples : (i+1)*FrameSamples])
		pkts = append(pkts, append([]byte(nil), p...))
	}
	reply := audio.Int16ToFloat32(audio.Float32ToInt16(audio.Resample(audio.Int16ToFloat32(pcm), SampleRate, 24000)))
	dec, _ := NewDecoder()
	defer dec.Close()
	down, _ := audio.NewResampler(SampleRate, 16000)
	up, _ := audio.NewResampler(24000, SampleRate)
	var acc []float32
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := i % len(pkts)
		frame, err := dec.Decode(pkts[k])
		if err != nil {
			b.Fatal(err)
		}
		_ = down.Process(audio.Int16ToFloat32(frame))
		acc = append(acc, up.Process(reply[k*480:(k+1)*480])...)
		if len(acc) >= FrameSamples {
			if _, err := enc.Encode(audio.Float32ToInt16(acc[:FrameSamples])); err != nil {
				b.Fatal(err)
			}
			acc = append(acc[:0], acc[FrameSamples:]...)
		}
	}
}

// TestLookaheadIsTheDelay: a click given to Encode comes out of the decoder Lookahead samples
// later (312 at 48 kHz for voiced's VoIP encoder: 2.5 ms + 4 ms).
func TestLookaheadIsTheDelay(t *testing.T) {
	enc, err := NewEncoder(32000)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	dec, err := NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	look, err := enc.Lookahead()
	if err != nil || look != 312 {
		t.Fatalf("Lookahead %d, %v; want 312", look, err)
	}
	const at = 2*FrameSamples + 100
	var out []int16
	for f := range 5 {
		pcm := make([]int16, FrameSamples)
		if f == at/FrameSamples {
			pcm[at%FrameSamples] = 20000
		}
		p, err := enc.Encode(pcm)
		if err != nil {
			t.Fatal(err)
		}
		d, err := dec.Decode(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d...)
	}
	peak := 0
	for i := range out {
		if abs(out[i]) > abs(out[peak]) {
			peak = i
		}
	}
	if d := peak - at; d < look-8 || d > look+8 {
		t.Fatalf("the click came out %d samples late, want %d (±8)", d, look)
	}
	enc.Close()
	if _, err := enc.Lookahead(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Lookahead after Close: %v", err)
	}
}

func abs(v int16) int {
	if v < 0 {
		return -int(v)
	}
	return int(v)
}
