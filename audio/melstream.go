package audio

import "math"

// MelStream is the log-mel front end of one open segment that grows (a streaming partial
// re-decodes the segment so far every few hundred ms). It keeps the frames that later audio can no
// longer change and computes only the rest, so Compute costs the new frames plus a few, not the
// whole 30 s window; the result is bit for bit LogMel(all appended audio).
//
// Which frames are final: frame t is the periodic-Hann window over padded[t·160, t·160+400), i.e.
// audio samples [t·160−200, t·160+200) (the centred STFT; below 0 the reflection of samples 1..200).
// Once t·160+200 ≤ len(audio) every sample it reads is real audio and never changes. The tail
// frames read the zero padding that later audio replaces, so they are recomputed on each Compute;
// frames whose window is all zero padding are the constant log10(1e-10). Whisper's normalisation
// (clamp to the window's max − 8, then (x+4)/4) depends on every frame, so it is applied at the end
// of each Compute from the running maximum of the final frames and the tail's.
//
// Its buffers grow with the segment (the padded audio to n + 600 samples, the kept frames to the
// ones computed), so a 3 s turn holds ~0.5 MB rather than a whole window's 3.8 MB.
//
// A MelStream uses one core and is not safe for concurrent use.
type MelStream struct {
	m        *Mel    // padded and spec grow as audio comes (a whole window's only near 30 s)
	n        int     // audio samples appended (at most WhisperSamples)
	final    int     // frames [0, final) are final in m.spec
	finalMax float64 // largest log10 mel of the final frames
}

// NewMelStream returns an empty stream for nMels bands.
func NewMelStream(nMels int) *MelStream {
	m := &Mel{nMels: nMels, bank: melBankFor(nMels), workers: []*melWorker{newMelWorker()}}
	return &MelStream{m: m, finalMax: math.Inf(-1)}
}

// Len is the number of samples appended so far (audio past 30 s is not kept).
func (s *MelStream) Len() int { return s.n }

// Append adds 16 kHz mono samples to the segment and returns how many it kept: the window is
// 30 s, so audio past WhisperSamples is dropped as LogMel would cut it.
func (s *MelStream) Append(pcm16k []float32) int {
	k := min(len(pcm16k), WhisperSamples-s.n)
	s.growPadded(s.n + k)
	copy(s.m.padded[melPad+s.n:], pcm16k[:k])
	s.n += k
	return k
}

// growPadded makes m.padded hold what the frames of n samples read: the left padding, the audio
// and zeros past it to the last frame that reads any audio (n + 600 in all); within 2 windows of
// 30 s, the whole padded window (every frame is computed there, and the right reflection is read).
// What it exposes reads as zero, as the padding past the audio must.
func (s *MelStream) growPadded(n int) {
	need := min(n+3*melPad, melPadded)
	if n > WhisperSamples-2*WhisperNFFT {
		need = melPadded
	}
	p := s.m.padded
	if need <= len(p) {
		return
	}
	if need <= cap(p) {
		old := len(p)
		p = p[:need]
		clear(p[old:])
	} else {
		grown := make([]float32, need, min(max(need, 2*cap(p)), melPadded))
		copy(grown, p)
		p = grown
	}
	s.m.padded = p
}

// Reset empties the stream for a new segment, keeping its buffers.
func (s *MelStream) Reset() {
	s.m.padded = s.m.padded[:0]
	s.n, s.final, s.finalMax = 0, 0, math.Inf(-1)
}

// finalFrames is how many leading frames depend only on n samples of audio.
func finalFrames(n int) int {
	if n < melPad {
		return 0
	}
	return min((n-melPad)/WhisperHop+1, WhisperFrames)
}

// Compute writes LogMel(the audio appended so far) into dst (grown if short) and returns it.
func (s *MelStream) Compute(dst []float32) []float32 {
	m, w := s.m, s.m.workers[0]
	size := m.nMels * WhisperFrames
	if cap(dst) < size {
		dst = make([]float32, size)
	}
	dst = dst[:size]
	s.growPadded(s.n) // an empty stream still has its padding

	// The padding as the one-shot front end sees it: samples past n are zero (growPadded exposes
	// zeros), the left reflection taken afresh, and the right one once the whole window is held.
	if len(m.padded) == melPadded {
		reflectPad(m.padded, melPad)
	} else {
		for i := 1; i <= melPad; i++ {
			m.padded[melPad-i] = m.padded[melPad+i]
		}
	}

	// The frames that read any audio: the final ones and the tail that also reads padding. The
	// ones past them read only zero padding (window starts at or past n, and 30 s is far enough
	// that the right reflection is zero too): the constant floor, which clampScale writes. Near
	// 30 s every frame is computed.
	busy := WhisperFrames
	if s.n <= WhisperSamples-2*WhisperNFFT {
		busy = min((s.n+melPad+WhisperHop-1)/WhisperHop, WhisperFrames) // first t with t·160−200 ≥ n
	}
	if need := busy * m.nMels; len(m.spec) < need {
		m.spec = append(m.spec, make([]float64, need-len(m.spec))...)
	}

	// Frames that became final since the last Compute are computed once and kept.
	if nf := finalFrames(s.n); nf > s.final {
		m.frames(w, s.final, nf)
		s.finalMax = max(s.finalMax, w.max)
		s.final = nf
	}
	globalMax := s.finalMax
	if busy > s.final {
		m.frames(w, s.final, busy)
		globalMax = max(globalMax, w.max)
	}
	if busy < WhisperFrames {
		globalMax = max(globalMax, melPadLog)
	}
	clampScale(dst, m.spec, m.nMels, busy, globalMax)
	return dst
}
