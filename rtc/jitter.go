package rtc

import (
	"time"

	"github.com/pion/interceptor/pkg/jitterbuffer"
	"github.com/pion/rtp"

	"github.com/voiced/voiced/audio/opus"
)

// The mic track's loss policy (see inbound).
const (
	// reorderWindow: a missing packet is declared lost once this many later ones have arrived
	// (60 ms at 20 ms packets); until then the packets after it wait for it. Nothing waits while
	// packets arrive in order.
	reorderWindow = 3
	// holdMax bounds how long a packet waits behind a missing one when no later packets come
	// (the sender stopped right after a loss: end of speech, DTX, a muted mic): the same 60 ms
	// as reorderWindow's packets. Past it the gap is concealed and what was held is decoded.
	holdMax = reorderWindow * frame
	// maxConceal bounds the frames concealed for one gap (100 ms); past it the rest of the gap is
	// skipped, as the sender paused or its clock jumped rather than lost that much audio.
	maxConceal = 5
	// maxAhead: a packet further ahead than this (1 s) restarts the sequence (what is held is
	// decoded first); it also bounds what is held.
	maxAhead = 50
	// maxSilence bounds the silence put in for one jump of the RTP timestamp (1 s at 48 kHz).
	// A DTX sender sends a packet at least every 400 ms of silence, so real gaps are far
	// shorter; a longer jump is a sender that stopped (a track replaced or paused) or a bogus
	// timestamp, and 1 s of silence already ends any turn the detector holds open (server_vad's
	// default wait is 500 ms). It bounds the memory and the detector's work one packet can cause.
	maxSilence = opus.SampleRate
	// idleAfter: a sender that sends nothing at all for this long (a stalled network, a browser
	// that stops a muted track, DTX between its 400 ms keep-alives) has its silence put in by the
	// wall clock, up to fillLag behind it, and again each idleAfter while nothing comes, so turn
	// detection and the session's clock go on. The sender's RTP clock is advanced by what was put
	// in, so a packet whose timestamp then jumps (DTX) adds only the rest: nothing is counted
	// twice. A packet merely delayed past idleAfter is still decoded after the silence (the
	// timeline then runs that much ahead, never more than the delay).
	idleAfter = 200 * time.Millisecond
	fillLag   = 100 * time.Millisecond
	// maxBurst bounds how far the mic audio heard may run ahead of the wall clock since the first
	// packet: a frame (a packet's, or one concealed) that would take it further is dropped
	// undecoded and counted (excess). A browser sends in real time; a peer sending faster (4x:
	// four times the decoding, turn detection and transcription a call is meant to cost) gets
	// real time plus this. 1 s lets through what a stalled network delivers at once when it
	// recovers (a stall of up to ~1 s; idleAfter has put in silence for it meanwhile).
	maxBurst = time.Second
)

// frameStep is one step for the decoder, in sequence order: a packet to decode; a frame lost,
// concealed from fec (the next packet, whose in-band FEC carries the lost frame) or, when fec
// is nil, by libopus's PLC; or silence samples (48 kHz) of sender time no packet covered (DTX,
// a paused sender, the rest of a gap longer than maxConceal).
type frameStep struct {
	payload []byte
	lost    bool
	fec     []byte
	silence int
}

// inbound puts the mic track's RTP packets back in sequence order and decides when a missing one
// is lost. The packets wait in pion's jitterbuffer.JitterBuffer (its ordered queue; we pop by
// sequence number): pion's ReceiverInterceptor around it is not used because it holds 50 packets
// (1 s) before the first one comes out, whatever the network does, and never skips a lost packet
// (its Pop fails at the missing head from then on). Owned by the call's reader goroutine.
type inbound struct {
	jb        *jitterbuffer.JitterBuffer
	started   bool
	head      uint16 // the next sequence number to decode
	newest    uint16 // the highest sequence number held
	held      int    // packets in jb
	concealed int    // frames concealed in the current gap
	// arrived is when each held packet came (zero: not held), by sequence number mod its size
	// (what is held spans at most maxAhead+1 numbers).
	arrived [64]time.Time

	// The sender's clock: the RTP timestamp the next frame should carry; a packet whose
	// timestamp is past it follows time no packet covered, put in as silence, so that the
	// timeline the turn detector and the meter see stays real time.
	tsKnown     bool
	nextTS      uint32
	lastSamples int       // the last frame's length (what PLC conceals)
	origin      time.Time // when the first packet arrived
	emitted     int64     // samples (48 kHz) of every step so far
	last        time.Time // when the last packet arrived or silence was filled in (idleAfter)
	// excess counts the frames dropped for running more than maxBurst ahead of real time.
	excess int
	// samples is a packet's length in samples at 48 kHz (opus.PacketSamples; tests stub it).
	samples func(payload []byte) (int, error)
}

func newInbound() *inbound {
	return &inbound{jb: jitterbuffer.New(jitterbuffer.WithMinimumPacketCount(1)),
		lastSamples: opus.FrameSamples, samples: opus.PacketSamples}
}

// ahead is how far sequence number a is past b (negative: behind), across the 16-bit wrap.
func ahead(a, b uint16) int { return int(int16(a - b)) }

// push takes one packet, arrived at now, and returns the frames now ready, in order.
func (in *inbound) push(p *rtp.Packet, now time.Time) []frameStep {
	if !in.started {
		in.started, in.head, in.newest, in.origin = true, p.SequenceNumber, p.SequenceNumber, now
	}
	in.last = now
	d := ahead(p.SequenceNumber, in.head)
	if d < 0 {
		return nil // late (already concealed or skipped) or a duplicate
	}
	var steps []frameStep
	if d > maxAhead {
		steps = in.flush(now)
		in.head, in.newest = p.SequenceNumber, p.SequenceNumber
	}
	if _, err := in.jb.PeekAtSequence(p.SequenceNumber); err == nil {
		return steps // a duplicate still held
	}
	in.jb.Push(p)
	in.held++
	in.arrived[p.SequenceNumber%uint16(len(in.arrived))] = now
	if ahead(p.SequenceNumber, in.newest) > 0 {
		in.newest = p.SequenceNumber
	}
	return in.release(steps, now)
}

// expire releases what waited holdMax behind a gap by now, with no packet arriving: the gap is
// concealed. The reader calls it at deadline.
func (in *inbound) expire(now time.Time) []frameStep {
	return in.release(nil, now)
}

// idle is when the sender, silent since the last packet or fill, is filled in (ok false before
// the first packet).
func (in *inbound) idle() (at time.Time, ok bool) {
	if !in.started {
		return time.Time{}, false
	}
	return in.last.Add(idleAfter), true
}

// fill puts in the silence of a sender that has sent nothing since idleAfter: up to fillLag
// behind the wall clock since the first packet, at most maxSilence at once. Nothing while
// packets are held (they are released first, by expire).
func (in *inbound) fill(now time.Time) []frameStep {
	if !in.started || now.Before(in.last.Add(idleAfter)) {
		return nil
	}
	in.last = now
	if in.held > 0 {
		return nil
	}
	wall := int64((now.Sub(in.origin) - fillLag) / (time.Second / opus.SampleRate))
	n := min(wall-in.emitted, maxSilence)
	if n <= 0 {
		return nil
	}
	in.emitted += n
	if in.tsKnown {
		in.nextTS += uint32(n)
	}
	return []frameStep{{silence: int(n)}}
}

// deadline is when the packets held behind a gap are released if none arrives (zero, ok false:
// nothing is held).
func (in *inbound) deadline() (at time.Time, ok bool) {
	for _, t := range in.arrived {
		if !t.IsZero() && (!ok || t.Before(at)) {
			at, ok = t, true
		}
	}
	if !ok {
		return time.Time{}, false
	}
	return at.Add(holdMax), true
}

func (in *inbound) pop(seq uint16) (*rtp.Packet, time.Time, bool) {
	pkt, err := in.jb.PeekAtSequence(seq)
	if err != nil {
		return nil, time.Time{}, false
	}
	in.jb.PopAtSequence(seq)
	in.held--
	slot := &in.arrived[seq%uint16(len(in.arrived))]
	arrived := *slot
	*slot = time.Time{}
	return pkt, arrived, true
}

// decoded is the step for pkt, after silence for any time its timestamp skipped. The silence is
// bounded by maxSilence and by the wall clock: what has been heard never runs more than holdMax
// ahead of the time since the first packet arrived, so a bogus timestamp cannot speed the
// timeline up.
func (in *inbound) decoded(steps []frameStep, pkt *rtp.Packet, arrived time.Time) []frameStep {
	if jump := int64(int32(pkt.Timestamp - in.nextTS)); in.tsKnown && jump > 0 {
		wall := int64((arrived.Sub(in.origin) + holdMax) / (time.Second / opus.SampleRate))
		if n := min(jump, maxSilence, wall-in.emitted); n > 0 {
			steps = append(steps, frameStep{silence: int(n)})
			in.emitted += n
		}
	}
	n, err := in.samples(pkt.Payload)
	if err != nil {
		n = in.lastSamples // decoded as a lost frame
	}
	in.lastSamples = n
	in.tsKnown, in.nextTS = true, pkt.Timestamp+uint32(n)
	if !in.inTime(n, arrived) {
		return steps // the sender's clock goes on past it: no silence is put in for it either
	}
	in.emitted += int64(n)
	return append(steps, frameStep{payload: pkt.Payload})
}

// inTime reports whether n more samples (48 kHz) keep what was heard within maxBurst of the wall
// clock at now since the first packet; when not, the frame is counted as excess (the caller
// drops it).
func (in *inbound) inTime(n int, now time.Time) bool {
	if in.emitted+int64(n) <= int64((now.Sub(in.origin)+maxBurst)/(time.Second/opus.SampleRate)) {
		return true
	}
	in.excess++
	return false
}

// release decodes the head while it is there; a missing head is lost once reorderWindow later
// packets arrived or the oldest packet held waited holdMax.
func (in *inbound) release(steps []frameStep, now time.Time) []frameStep {
	for in.held > 0 {
		if pkt, arrived, ok := in.pop(in.head); ok {
			in.head++
			in.concealed = 0
			steps = in.decoded(steps, pkt, arrived)
			continue
		}
		if dl, _ := in.deadline(); ahead(in.newest, in.head) < reorderWindow && now.Before(dl) {
			break // the head may still come
		}
		// The head is lost.
		if in.concealed < maxConceal {
			in.concealed++
			in.nextTS += uint32(in.lastSamples)
			if in.inTime(in.lastSamples, now) {
				step := frameStep{lost: true}
				if next, err := in.jb.PeekAtSequence(in.head + 1); err == nil {
					step.fec = next.Payload
				}
				steps = append(steps, step)
				in.emitted += int64(in.lastSamples)
			}
		}
		in.head++
	}
	return steps
}

// flush returns every packet held, in order, without concealing the gaps between them; the
// sequence restarts, and with it the sender's clock.
func (in *inbound) flush(now time.Time) []frameStep {
	var steps []frameStep
	for ; in.held > 0; in.head++ {
		if pkt, _, ok := in.pop(in.head); ok {
			n, err := in.samples(pkt.Payload)
			if err != nil {
				n = in.lastSamples
			}
			if in.inTime(n, now) {
				steps = append(steps, frameStep{payload: pkt.Payload})
				in.emitted += int64(n)
			}
		}
	}
	in.concealed = 0
	in.tsKnown = false
	return steps
}
