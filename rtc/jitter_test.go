package rtc

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pion/rtp"
	"github.com/pion/webrtc/v4"

	"github.com/voiced/voiced/speechcore/audio"
	"github.com/voiced/voiced/speechcore/audio/opus"
)

// describe renders steps as the test tables write them: "5" a packet decoded (its payload is its
// sequence number), "fec6" a frame recovered from packet 6, "plc" a frame concealed.
func describe(steps []frameStep) string {
	var out []string
	for _, s := range steps {
		switch {
		case s.lost && s.fec != nil:
			out = append(out, "fec"+string(s.fec))
		case s.lost:
			out = append(out, "plc")
		default:
			out = append(out, string(s.payload))
		}
	}
	return strings.Join(out, " ")
}

func TestInboundOrder(t *testing.T) {
	tests := map[string]struct {
		arrive []uint16
		want   string
	}{
		"in order":               {[]uint16{1, 2, 3, 4}, "1 2 3 4"},
		"two swapped":            {[]uint16{1, 3, 2, 4}, "1 2 3 4"},
		"late by two":            {[]uint16{1, 3, 4, 2, 5}, "1 2 3 4 5"},
		"one lost: FEC":          {[]uint16{1, 3, 4, 5, 6}, "1 fec3 3 4 5 6"},
		"three lost: PLC, FEC":   {[]uint16{1, 5, 6, 7, 8}, "1 plc plc fec5 5 6 7 8"},
		"a long gap: 5 frames":   {[]uint16{1, 11, 12, 13, 14}, "1 plc plc plc plc plc 11 12 13 14"},
		"duplicate":              {[]uint16{1, 2, 2, 3}, "1 2 3"},
		"duplicate held":         {[]uint16{1, 3, 3, 2}, "1 2 3"},
		"too late: concealed":    {[]uint16{1, 3, 4, 5, 2, 6}, "1 fec3 3 4 5 6"},
		"across the wrap":        {[]uint16{65534, 0, 65535, 1}, "65534 65535 0 1"},
		"lost across the wrap":   {[]uint16{65534, 0, 1, 2}, "65534 fec0 0 1 2"},
		"a jump restarts":        {[]uint16{1, 3, 200, 201}, "1 3 200 201"},
		"waits for the window":   {[]uint16{1, 3, 4}, "1"},
		"first packet not first": {[]uint16{5, 4, 6}, "5 6"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			in := newInbound()
			var steps []frameStep
			for _, seq := range tc.arrive {
				steps = append(steps, in.push(&rtp.Packet{Header: rtp.Header{SequenceNumber: seq}, Payload: []byte(fmt.Sprint(seq))})...)
			}
			if got := describe(steps); got != tc.want {
				t.Errorf("arrivals %v: decoded %q, want %q", tc.arrive, got, tc.want)
			}
			if in.held > maxAhead+1 {
				t.Errorf("holds %d packets", in.held)
			}
		})
	}
}

// TestCallLossAndReorder: a peer's packets arrive reordered, one lost alone and three lost in a
// row; the call hears exactly the frames sent (no frame missing or extra), and the audio is what
// libopus gives for that stream decoded in order with the lone loss recovered from the next
// packet's in-band FEC and the burst concealed (PLC, then FEC for its last frame), sample for
// sample.
func TestCallLossAndReorder(t *testing.T) {
	leakCheck(t)
	speech := speech16k(t)
	ep, err := NewEndpoint(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	cl := newClient(t)
	defer cl.close()
	// An RTP track the test numbers itself (the sample track numbers its packets in order).
	mic, err := webrtc.NewTrackLocalStaticRTP(webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeOpus, ClockRate: 48000, Channels: 2}, "mic-rtp", "client")
	if err != nil {
		t.Fatal(err)
	}
	senders := cl.pc.GetSenders()
	if err := senders[0].ReplaceTrack(mic); err != nil {
		t.Fatal(err)
	}
	o := newOwner()
	h := o.handlers()
	h.InputRate = opus.SampleRate // no resampling: the decoder's output, as it came
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	answer, call, err := ep.Answer(ctx, cl.offer(t), h)
	if err != nil {
		t.Fatal(err)
	}
	defer call.Close()
	if err := cl.pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: answer}); err != nil {
		t.Fatal(err)
	}
	<-cl.dcOpen

	// 4.8 s of speech (all of the recording) as 240 Opus packets (FEC on, as a browser sends with useinbandfec=1).
	enc, err := opus.NewEncoder(32000)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	pcm := audio.Float32ToInt16(audio.Resample(speech[:240*320], 16000, opus.SampleRate))
	var packets [][]byte
	for i := 0; (i+1)*opus.FrameSamples <= len(pcm); i++ {
		p, err := enc.Encode(pcm[i*opus.FrameSamples : (i+1)*opus.FrameSamples])
		if err != nil {
			t.Fatal(err)
		}
		packets = append(packets, append([]byte(nil), p...))
	}
	// The losses fall in speech, where the next packet's FEC differs from PLC (in a pause the
	// encoder sends no FEC, and the two would be the same: the test could not tell them apart).
	lostAlone := fecLoss(t, packets, 10, 110)
	last := fecLoss(t, packets, 130, 230)
	burst := []int{last - 2, last - 1, last}
	gone := map[int]bool{lostAlone: true, burst[0]: true, burst[1]: true, burst[2]: true}
	order := make([]int, 0, len(packets))
	for i := range packets {
		if !gone[i] {
			order = append(order, i)
		}
	}
	// Reordered: two packets swapped after the lone loss, and one two places late before the burst.
	swapA, lateB := lostAlone+4, burst[0]-6
	if lostAlone+6 >= burst[0]-6 {
		t.Fatalf("losses at %d and %v leave no room to reorder between them", lostAlone, burst)
	}
	at := func(frame int) int { return slices.Index(order, frame) }
	a, b := at(swapA), at(lateB)
	order[a], order[a+1] = order[a+1], order[a]
	copy(order[b:b+3], []int{lateB + 1, lateB + 2, lateB})
	// The reference: libopus on the stream in order, with the policy's recoveries.
	ref, err := opus.NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	var want []float32
	for i, p := range packets {
		var out []int16
		switch {
		case i == lostAlone || i == burst[len(burst)-1]:
			out, err = ref.DecodeFEC(packets[i+1])
		case gone[i]:
			out, err = ref.Decode(nil)
		default:
			out, err = ref.Decode(p)
		}
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, audio.Int16ToFloat32(out)...)
	}

	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	const firstSeq = 65500 // the sequence wraps during the test
	for _, i := range order {
		<-tick.C
		if err := mic.WriteRTP(&rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: 111, SequenceNumber: uint16(firstSeq + i),
			Timestamp: uint32(i * opus.FrameSamples), SSRC: 1}, Payload: packets[i]}); err != nil {
			t.Fatal(err)
		}
	}
	// The last packets wait for nothing (no loss at the end): everything sent is heard.
	waitFor(t, func() bool { o.mu.Lock(); defer o.mu.Unlock(); return len(o.audio) >= len(want) })
	o.mu.Lock()
	heard := append([]float32(nil), o.audio...)
	o.mu.Unlock()
	t.Logf("frame %d lost alone, %v in a row; %d and %d reordered", lostAlone, burst, swapA, lateB)
	t.Logf("sent %d packets (%d lost, 2 reordered): heard %d samples, want %d (%d frames)", len(order), len(gone), len(heard), len(want), len(packets))
	if len(heard) != len(want) {
		t.Fatalf("heard %d samples, want %d: the stream's duration is %d frames", len(heard), len(want), len(packets))
	}
	for i := range want {
		if heard[i] != want[i] {
			t.Fatalf("sample %d (frame %d) differs from the in-order decode with FEC/PLC: %v, want %v", i, i/opus.FrameSamples, heard[i], want[i])
		}
	}
}

// fecLoss is the first frame in [from, to) whose loss the next packet's in-band FEC recovers
// differently from PLC (after decoding every packet before it).
func fecLoss(t *testing.T, packets [][]byte, from, to int) int {
	t.Helper()
	for k := from; k < to; k++ {
		a, _ := opus.NewDecoder()
		b, _ := opus.NewDecoder()
		for _, p := range packets[:k] {
			a.Decode(p)
			b.Decode(p)
		}
		fec, _ := a.DecodeFEC(packets[k+1])
		plc, _ := b.Decode(nil)
		differs := false
		for i := range fec {
			differs = differs || fec[i] != plc[i]
		}
		a.Close()
		b.Close()
		if differs {
			return k
		}
	}
	t.Fatalf("no frame in [%d, %d) whose next packet carries FEC: is the encoder's in-band FEC on?", from, to)
	return 0
}
