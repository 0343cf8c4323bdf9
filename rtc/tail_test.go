package rtc

import (
	"context"
	"math"
	"testing"

	"github.com/voiced/voiced/audio/opus"
	"github.com/voiced/voiced/internal/testkit"
)

// tone is n samples of a 440 Hz sine at 24 kHz, amplitude 0.3 (RMS 0.21): every 20 ms of it is
// loud, so a packet of it is never taken for silence.
func tone(n int) []float32 {
	pcm := make([]float32, n)
	for i := range pcm {
		pcm[i] = 0.3 * float32(math.Sin(2*math.Pi*440*float64(i)/OutputRate))
	}
	return pcm
}

// Levels (RMS of a decoded 20 ms packet, full scale 1) that tell reply audio from the tail: the
// test tone is 0.21 (a reply's first packet, which starts after the resampler's delay, ≥ 0.17
// measured); the tail decodes to the codec's ringing of the cut (RMS 0.004 over its first packet
// after lookahead and settling, 0.002 over the second, then digital zero). 0.01 (−40 dBFS) is
// tests/webrtc_test.go's "energetic" level, 26 dB under the tone and 8 dB over the ringing.
const (
	loudPacket  = 0.1
	quietPacket = 0.01
)

// codecSettle is how long (samples at 48 kHz) the decoded audio rings on after a hard cut to
// zeros: measured per ms after the lookahead, RMS 0.076, 0.043, 0.028, 0.018, then ≤ 0.008.
const codecSettle = 4 * 48

// checkTail requires tail to be a silence tail: its first packet carries the encoder's lookahead
// (the last look samples of the cut reply, counted as played) and the codec settling after the
// cut; from there on it is quiet.
func checkTail(t *testing.T, name string, tail []rxPacket, look int) {
	t.Helper()
	for i, p := range tail {
		pcm := p.pcm
		if i == 0 {
			pcm = pcm[look+codecSettle:]
		}
		if r := rmsOf(pcm); r >= quietPacket {
			t.Errorf("%s: tail packet %d of %d has RMS %.4f, want < %v (silence)", name, i, len(tail), r, quietPacket)
		}
	}
}

// checkLoud requires every packet of a reply to carry the tone.
func checkLoud(t *testing.T, name string, reply []rxPacket) {
	t.Helper()
	for i, p := range reply {
		if r := rmsOf(p.pcm); r < loudPacket {
			t.Errorf("%s: packet %d of %d has RMS %.4f, want ≥ %v (the tone)", name, i, len(reply), r, loudPacket)
		}
	}
}

// lookahead is the pacer's encoder delay (the same settings as pace's encoder).
func lookahead(t *testing.T) int {
	t.Helper()
	enc, err := opus.NewEncoder(32000)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	look, err := enc.Lookahead()
	if err != nil {
		t.Fatal(err)
	}
	return look
}

// rmsOf is the root mean square of pcm, full scale 1.
func rmsOf(pcm []int16) float64 {
	if len(pcm) == 0 {
		return 0
	}
	var sum float64
	for _, v := range pcm {
		f := float64(v) / 32768
		sum += f * f
	}
	return math.Sqrt(sum / float64(len(pcm)))
}

// TestCallCutSilenceTail: a reply cut by Clear is followed on the track by exactly
// CutTailPackets packets that decode to silence, on the same RTP timeline, with no
// output_audio_buffer report and no samples counted as played; a new reply replaces the rest of
// a tail at the next tick; a reply that ends by itself gets no tail.
func TestCallCutSilenceTail(t *testing.T) {
	testkit.CheckLeaks(t)
	ep, cl, o, call := connect(t, Config{})
	defer ep.Close()
	defer cl.close()
	ctx := context.Background()
	received := func() int { cl.mu.Lock(); defer cl.mu.Unlock(); return len(cl.rx) }
	output := func(want bool) {
		t.Helper()
		if s := <-o.output; s != want {
			t.Fatalf("output report %v, want %v", s, want)
		}
	}

	// A: cut while it plays; its whole tail goes out.
	if err := call.Play(ctx, tone(2*OutputRate)); err != nil {
		t.Fatal(err)
	}
	output(true)
	waitFor(t, func() bool { return call.Played() >= 10*outFrame })
	playedA := call.Clear()
	output(false)
	replyA := int(playedA / outFrame)
	waitFor(t, func() bool { return received() >= replyA+CutTailPackets })
	if p := call.Played(); p != playedA {
		t.Fatalf("the tail counted as played: %d -> %d", playedA, p)
	}

	// B: cut too, and a new reply (C) is given while B's tail is going out.
	if err := call.Play(ctx, tone(2*OutputRate)); err != nil {
		t.Fatal(err)
	}
	output(true)
	waitFor(t, func() bool { return call.Played() >= playedA+10*outFrame })
	playedB := call.Clear()
	output(false)
	replyB := int((playedB - playedA) / outFrame)
	waitFor(t, func() bool { return received() >= replyA+CutTailPackets+replyB+2 })
	const short = 5 // packets of C and of D
	if err := call.Play(ctx, tone(short*outFrame)); err != nil {
		t.Fatal(err)
	}
	output(true)
	output(false) // C ends by itself
	// D right after C's natural end: if C had a tail, its first packet went out with that report.
	if err := call.Play(ctx, tone(short*outFrame)); err != nil {
		t.Fatal(err)
	}
	output(true)
	output(false)
	if err := call.Send([]byte("sync")); err != nil { // a round trip after D's last packet
		t.Fatal(err)
	}
	<-cl.msgs
	select {
	case s := <-o.output:
		t.Fatalf("an output report (%v) beyond the replies' own", s)
	default:
	}

	cl.mu.Lock()
	rx := append([]rxPacket(nil), cl.rx...)
	cl.mu.Unlock()
	for i, p := range rx {
		if want := rx[0].rtpTime + uint32(i*opus.FrameSamples); p.rtpTime != want {
			t.Fatalf("packet %d: RTP timestamp %d, want %d (the timeline is not contiguous)", i, p.rtpTime, want)
		}
	}
	tailB := len(rx) - (replyA + CutTailPackets + replyB + 2*short)
	t.Logf("A %d packets + tail %d, B %d + tail %d, C %d, D %d", replyA, CutTailPackets, replyB, tailB, short, short)
	if tailB < 2 || tailB >= CutTailPackets {
		t.Fatalf("B's tail: %d packets before C's audio, want 2 to %d (C replaces the rest)", tailB, CutTailPackets-1)
	}
	look := lookahead(t)
	next := func(n int) []rxPacket { seg := rx[:n]; rx = rx[n:]; return seg }
	checkLoud(t, "A", next(replyA))
	checkTail(t, "A's tail", next(CutTailPackets), look)
	checkLoud(t, "B", next(replyB))
	checkTail(t, "B's tail", next(tailB), look)
	checkLoud(t, "C", next(short)) // C's last packet is followed by D's first: no tail
	checkLoud(t, "D", next(short))
}
