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

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/audio/opus"
	"github.com/voiced/voiced/internal/testkit"
)

// describe renders steps as the test tables write them: "5" a packet decoded (its payload is its
// sequence number), "fec6" a frame recovered from packet 6, "plc" a frame concealed.
func describe(steps []frameStep) string {
	var out []string
	for _, s := range steps {
		switch {
		case s.silence > 0:
			out = append(out, fmt.Sprint("sil", s.silence))
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
	t0 := time.Unix(1000, 0) // every packet arrives at once: only the window releases them
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			in := newInbound()
			var steps []frameStep
			for _, seq := range tc.arrive {
				steps = append(steps, in.push(&rtp.Packet{Header: rtp.Header{SequenceNumber: seq}, Payload: []byte(fmt.Sprint(seq))}, t0)...)
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

// TestInboundReleasedOnTime: packets held behind a gap come out holdMax after the oldest of them
// arrived when no later packet comes (the sender stopped right after a loss), on a fake clock.
// Events: "5@80" packet 5 arrives at 80 ms; "@120" the reader's deadline fires at 120 ms.
func TestInboundReleasedOnTime(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tests := map[string]struct {
		events []string
		want   []string // released by each event
	}{
		"one lost, then quiet": {
			events: []string{"1@0", "2@20", "4@60", "5@80", "@119", "@120"},
			want:   []string{"1", "2", "", "", "", "fec4 4 5"},
		},
		"two gaps, each waits its own": {
			events: []string{"1@0", "3@40", "@100", "5@110", "@169", "@170"},
			want:   []string{"1", "", "fec3 3", "", "", "fec5 5"},
		},
		"a burst, then quiet: PLC, FEC": {
			events: []string{"1@0", "4@60", "@120"},
			want:   []string{"1", "", "plc fec4 4"},
		},
		"the last packet lost: nothing held, nothing waits": {
			events: []string{"1@0", "2@20"},
			want:   []string{"1", "2"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			in := newInbound()
			var got []string
			for _, ev := range tc.events {
				seq, ms, _ := strings.Cut(ev, "@")
				var n int
				fmt.Sscan(ms, &n)
				now := t0.Add(time.Duration(n) * time.Millisecond)
				if seq == "" {
					dl, _ := in.deadline()
					released := describe(in.expire(now))
					if now.Before(dl) && released != "" {
						t.Errorf("%s, before the deadline (%v): released %q", ev, dl.Sub(t0), released)
					}
					got = append(got, released)
					continue
				}
				var s uint16
				fmt.Sscan(seq, &s)
				got = append(got, describe(in.push(&rtp.Packet{Header: rtp.Header{SequenceNumber: s}, Payload: []byte(seq)}, now)))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("released %q, want %q", got, tc.want)
			}
			if _, ok := in.deadline(); ok || in.held != 0 {
				t.Errorf("still holds %d packets", in.held)
			}
		})
	}
}

// TestInboundTimestampGaps: time the sender's RTP clock skipped (DTX, a pause, the rest of a long
// loss) is heard as silence, bounded by the wall clock and by maxSilence, on a fake clock.
// Events: "seq@ms/ts" packet seq arrives at ms with RTP timestamp ts in frames (960 samples).
func TestInboundTimestampGaps(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tests := map[string]struct {
		events []string
		want   string
	}{
		"in time: no silence":              {[]string{"1@0/0", "2@20/1", "3@40/2"}, "1 2 3"},
		"DTX, 400 ms":                      {[]string{"1@0/0", "2@20/1", "3@440/22", "4@460/23"}, "1 2 sil19200 3 4"},
		"a long loss: PLC, then silence":   {[]string{"1@0/0", "12@220/11", "13@240/12", "14@260/13"}, "1 plc plc plc plc plc sil4800 12 13 14"},
		"a lone loss: no silence":          {[]string{"1@0/0", "3@40/2", "4@60/3", "5@80/4"}, "1 fec3 3 4 5"},
		"a stop of 5 s: 1 s":               {[]string{"1@0/0", "2@5000/250"}, "1 sil48000 2"},
		"a bogus 10 min jump: wall clock":  {[]string{"1@0/0", "2@20/30000"}, "1 sil2880 2"},
		"timestamp backwards: no silence":  {[]string{"1@0/100", "2@20/0", "3@40/1"}, "1 2 3"},
		"a sequence restart forgets clock": {[]string{"1@0/0", "200@20/900000", "201@40/900001"}, "1 200 201"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			in := newInbound()
			in.samples = func([]byte) (int, error) { return opus.FrameSamples, nil }
			var steps []frameStep
			for _, ev := range tc.events {
				var seq uint16
				var ms, ts int
				if _, err := fmt.Sscanf(ev, "%d@%d/%d", &seq, &ms, &ts); err != nil {
					t.Fatal(err)
				}
				steps = append(steps, in.push(&rtp.Packet{Header: rtp.Header{SequenceNumber: seq, Timestamp: uint32(ts * opus.FrameSamples)},
					Payload: []byte(fmt.Sprint(seq))}, t0.Add(time.Duration(ms)*time.Millisecond))...)
			}
			if got := describe(steps); got != tc.want {
				t.Errorf("%v: %q, want %q", tc.events, got, tc.want)
			}
		})
	}
}

// rtpCall answers, on an endpoint made with cfg, a pion client whose mic is an RTP track the test
// numbers itself (the sample track numbers its packets in order); the owner hears 48 kHz, as the
// decoder gives it.
func rtpCall(t *testing.T, cfg Config) (*webrtc.TrackLocalStaticRTP, *owner, *Endpoint, func()) {
	t.Helper()
	ep, err := NewEndpoint(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cl := newClient(t)
	mic, err := webrtc.NewTrackLocalStaticRTP(webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeOpus, ClockRate: 48000, Channels: 2}, "mic-rtp", "client")
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.pc.GetSenders()[0].ReplaceTrack(mic); err != nil {
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
	if err := cl.pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: answer}); err != nil {
		t.Fatal(err)
	}
	<-cl.dcOpen
	return mic, o, ep, func() {
		call.Close()
		cl.close()
		ep.Close()
	}
}

// heardUpTo is the first n samples the owner heard; anything heard after them must be the
// silence a sender that stopped is filled in with (idleAfter).
func (o *owner) heardUpTo(t *testing.T, n int) []float32 {
	t.Helper()
	o.mu.Lock()
	heard := append([]float32(nil), o.audio...)
	o.mu.Unlock()
	if len(heard) < n {
		t.Fatalf("heard %d samples, want %d", len(heard), n)
	}
	for i, v := range heard[n:] {
		if v != 0 {
			t.Fatalf("sample %d, after the %d sent, is %v: want only the silence of a stopped sender", n+i, n, v)
		}
	}
	return heard[:n]
}

// heardSamples is how much audio the owner has heard.
func (o *owner) heardSamples() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.audio)
}

// TestCallReleasesAfterLoss: the second-to-last packet is lost and the sender stops: the call
// still hears every frame (the lost one concealed), soon after the last packet.
func TestCallReleasesAfterLoss(t *testing.T) {
	testkit.CheckLeaks(t)
	speech := speech16k(t)
	mic, o, _, done := rtpCall(t, Config{})
	defer done()
	enc, err := opus.NewEncoder(32000)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	const frames = 25
	pcm := audio.Float32ToInt16(audio.Resample(speech[:frames*320], 16000, opus.SampleRate))
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var sentLast time.Time
	for i := range frames {
		p, err := enc.Encode(pcm[i*opus.FrameSamples : (i+1)*opus.FrameSamples])
		if err != nil {
			t.Fatal(err)
		}
		<-tick.C
		if i == frames-2 {
			continue // lost
		}
		if err := mic.WriteRTP(&rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: 111, SequenceNumber: uint16(100 + i),
			Timestamp: uint32(i * opus.FrameSamples), SSRC: 1}, Payload: p}); err != nil {
			t.Fatal(err)
		}
		sentLast = time.Now()
	}
	want := frames * opus.FrameSamples
	waitFor(t, func() bool { return o.heardSamples() >= want })
	took := time.Since(sentLast)
	t.Logf("the frames behind the loss were heard %v after the last packet was sent (bound %v + the network)", took, holdMax)
	o.heardUpTo(t, want)
	// Generous: the bound is holdMax; a loaded 2-core box adds scheduling, never seconds.
	if took > time.Second {
		t.Fatalf("released %v after the last packet, want about %v", took, holdMax)
	}
}

// TestCallDTXKeepsTime: a sender stops sending for 400 ms (Opus DTX in a pause: the sequence
// goes on, the RTP timestamp jumps) between two seconds of speech: the call hears the pause as
// 400 ms of silence, so exactly the sender's duration comes out.
func TestCallDTXKeepsTime(t *testing.T) {
	testkit.CheckLeaks(t)
	speech := speech16k(t)
	mic, o, _, done := rtpCall(t, Config{})
	defer done()
	enc, err := opus.NewEncoder(32000)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	const talk, pause = 50, 20 // frames: 1 s of speech, 400 ms of DTX, 1 s of speech
	pcm := audio.Float32ToInt16(audio.Resample(speech[:2*talk*320], 16000, opus.SampleRate))
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	seq := uint16(7)
	for i := range 2*talk + pause {
		<-tick.C
		if i >= talk && i < talk+pause {
			continue // DTX: nothing sent, the sender's clock runs on
		}
		k := i
		if i >= talk {
			k = i - pause
		}
		p, err := enc.Encode(pcm[k*opus.FrameSamples : (k+1)*opus.FrameSamples])
		if err != nil {
			t.Fatal(err)
		}
		if err := mic.WriteRTP(&rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: 111, SequenceNumber: seq,
			Timestamp: uint32(5000 + i*opus.FrameSamples), SSRC: 1}, Payload: p}); err != nil {
			t.Fatal(err)
		}
		seq++
	}
	want := (2*talk + pause) * opus.FrameSamples
	waitFor(t, func() bool { return o.heardSamples() >= want })
	// The pause is filled by the wall clock while nothing comes, then by the timestamp jump for the
	// rest: a pause kept too long pushes speech past the samples sent (heardUpTo fails), one kept
	// too short pulls speech into the pause (the loop below fails).
	heard := o.heardUpTo(t, want)
	t.Logf("sent %d packets over %d frames of sender time: want %d samples", 2*talk, 2*talk+pause, want)
	for i := talk * opus.FrameSamples; i < (talk+pause)*opus.FrameSamples; i++ {
		if heard[i] != 0 {
			t.Fatalf("sample %d, in the pause, is %v: want silence", i, heard[i])
		}
	}
}

// TestCallLossAndReorder: a peer's packets arrive reordered, one lost alone and three lost in a
// row; the call hears exactly the frames sent (no frame missing or extra), and the audio is what
// libopus gives for that stream decoded in order with the lone loss recovered from the next
// packet's in-band FEC and the burst concealed (PLC, then FEC for its last frame), sample for
// sample.
func TestCallLossAndReorder(t *testing.T) {
	testkit.CheckLeaks(t)
	speech := speech16k(t)
	mic, o, _, done := rtpCall(t, Config{})
	defer done()

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
	heard := o.heardUpTo(t, len(want))
	t.Logf("frame %d lost alone, %v in a row; %d and %d reordered", lostAlone, burst, swapA, lateB)
	t.Logf("sent %d packets (%d lost, 2 reordered): want %d samples (%d frames)", len(order), len(gone), len(want), len(packets))
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

// A sender that sends nothing at all is filled in by the wall clock (up to fillLag behind it,
// each idleAfter), and a packet whose timestamp then jumps adds only the rest of its pause.
func TestInboundFillsASilentSender(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	pkt := func(seq uint16, ts int) *rtp.Packet {
		return &rtp.Packet{Header: rtp.Header{SequenceNumber: seq, Timestamp: uint32(ts * opus.FrameSamples)}, Payload: []byte(fmt.Sprint(seq))}
	}
	in := newInbound()
	in.samples = func([]byte) (int, error) { return opus.FrameSamples, nil }
	if got := describe(in.fill(at(0))); got != "" {
		t.Fatalf("before the first packet: %q, want nothing", got)
	}
	var steps []frameStep
	steps = append(steps, in.push(pkt(1, 0), at(0))...)
	steps = append(steps, in.push(pkt(2, 1), at(20))...)
	steps = append(steps, in.fill(at(100))...) // not idle yet (idle at 220)
	steps = append(steps, in.fill(at(300))...) // to 200 ms: 9600 − 1920
	steps = append(steps, in.fill(at(400))...) // not idle since the last fill (idle at 500)
	steps = append(steps, in.fill(at(600))...) // to 500 ms: 24000 − 9600
	steps = append(steps, in.push(pkt(3, 35), at(700))...)
	if got, want := describe(steps), "1 2 sil7680 sil14400 sil9600 3"; got != want {
		t.Fatalf("steps %q, want %q", got, want)
	}
	if idle, ok := in.idle(); !ok || !idle.Equal(at(900)) {
		t.Fatalf("idle at %v, want 200 ms after the last packet", idle)
	}

	// A sender that resumes without its clock having run on: nothing more is put in.
	in2 := newInbound()
	in2.samples = in.samples
	steps = append(in2.push(pkt(1, 0), at(0)), in2.fill(at(600))...)
	steps = append(steps, in2.push(pkt(2, 1), at(620))...)
	if got, want := describe(steps), "1 sil23040 2"; got != want {
		t.Fatalf("resumed: %q, want %q", got, want)
	}

	// While a packet is held behind a gap, the gap is decided first (expire), not filled.
	in3 := newInbound()
	in3.samples = in.samples
	in3.push(pkt(1, 0), at(0))
	in3.push(pkt(3, 2), at(20))
	if got := describe(in3.fill(at(400))); got != "" {
		t.Fatalf("with a packet held: %q, want nothing", got)
	}
}

// TestCallSilentSenderKeepsTime: a sender that stops sending entirely (no DTX keep-alives): the
// call goes on hearing silence in real time, so a turn held open can end.
func TestCallSilentSenderKeepsTime(t *testing.T) {
	testkit.CheckLeaks(t)
	speech := speech16k(t)
	mic, o, _, done := rtpCall(t, Config{})
	defer done()
	enc, err := opus.NewEncoder(32000)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	const frames = 25 // 500 ms
	pcm := audio.Float32ToInt16(audio.Resample(speech[:frames*320], 16000, opus.SampleRate))
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for i := range frames {
		p, err := enc.Encode(pcm[i*opus.FrameSamples : (i+1)*opus.FrameSamples])
		if err != nil {
			t.Fatal(err)
		}
		<-tick.C
		if err := mic.WriteRTP(&rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: 111, SequenceNumber: uint16(40 + i),
			Timestamp: uint32(i * opus.FrameSamples), SSRC: 1}, Payload: p}); err != nil {
			t.Fatal(err)
		}
	}
	stopped := time.Now()
	sent := frames * opus.FrameSamples
	want := sent + opus.SampleRate/2 // half a second of the silence that follows
	waitFor(t, func() bool { return o.heardSamples() >= want })
	o.heardUpTo(t, sent) // what follows the speech is silence
	t.Logf("500 ms of silence heard %v after the sender stopped (fill each %v, %v behind the wall clock)",
		time.Since(stopped).Round(time.Millisecond), idleAfter, fillLag)
}
