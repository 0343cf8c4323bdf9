package rtc

import (
	"time"

	"github.com/pion/interceptor/pkg/jitterbuffer"
	"github.com/pion/rtp"
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
)

// frameStep is one 20 ms frame for the decoder, in sequence order: a packet to decode, or a
// frame lost, concealed from fec (the next packet, whose in-band FEC carries the lost frame)
// or, when fec is nil, by libopus's PLC.
type frameStep struct {
	payload []byte
	lost    bool
	fec     []byte
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
}

func newInbound() *inbound {
	return &inbound{jb: jitterbuffer.New(jitterbuffer.WithMinimumPacketCount(1))}
}

// ahead is how far sequence number a is past b (negative: behind), across the 16-bit wrap.
func ahead(a, b uint16) int { return int(int16(a - b)) }

// push takes one packet, arrived at now, and returns the frames now ready, in order.
func (in *inbound) push(p *rtp.Packet, now time.Time) []frameStep {
	if !in.started {
		in.started, in.head, in.newest = true, p.SequenceNumber, p.SequenceNumber
	}
	d := ahead(p.SequenceNumber, in.head)
	if d < 0 {
		return nil // late (already concealed or skipped) or a duplicate
	}
	var steps []frameStep
	if d > maxAhead {
		steps = in.flush()
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

func (in *inbound) pop(seq uint16) (*rtp.Packet, bool) {
	pkt, err := in.jb.PeekAtSequence(seq)
	if err != nil {
		return nil, false
	}
	in.jb.PopAtSequence(seq)
	in.held--
	in.arrived[seq%uint16(len(in.arrived))] = time.Time{}
	return pkt, true
}

// release decodes the head while it is there; a missing head is lost once reorderWindow later
// packets arrived or the oldest packet held waited holdMax.
func (in *inbound) release(steps []frameStep, now time.Time) []frameStep {
	for in.held > 0 {
		if pkt, ok := in.pop(in.head); ok {
			in.head++
			in.concealed = 0
			steps = append(steps, frameStep{payload: pkt.Payload})
			continue
		}
		if dl, _ := in.deadline(); ahead(in.newest, in.head) < reorderWindow && now.Before(dl) {
			break // the head may still come
		}
		// The head is lost.
		if in.concealed < maxConceal {
			step := frameStep{lost: true}
			if next, err := in.jb.PeekAtSequence(in.head + 1); err == nil {
				step.fec = next.Payload
			}
			steps = append(steps, step)
			in.concealed++
		}
		in.head++
	}
	return steps
}

// flush returns every packet held, in order, without concealing the gaps between them.
func (in *inbound) flush() []frameStep {
	var steps []frameStep
	for ; in.held > 0; in.head++ {
		if pkt, ok := in.pop(in.head); ok {
			steps = append(steps, frameStep{payload: pkt.Payload})
		}
	}
	in.concealed = 0
	return steps
}
