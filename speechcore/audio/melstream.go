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
// A MelStream uses one core and is not safe for concurrent use.
type MelStream struct {
	m        *Mel
	n        int     // audio samples appended (at most WhisperSamples)
	final    int     // frames [0, final) are final in m.spec
	finalMax float64 // largest log10 mel of the final frames
	floored  int     // frames [floored, WhisperFrames) hold the all-padding floor in m.spec
}

// NewMelStream returns an empty stream for nMels bands.
func NewMelStream(nMels int) *MelStream {
	m := NewMel(nMels)
	m.workers = m.workers[:1]
	return &MelStream{m: m, finalMax: math.Inf(-1), floored: WhisperFrames}
}

// Len is the number of samples appended so far (audio past 30 s is not kept).
func (s *MelStream) Len() int { return s.n }

// Append adds 16 kHz mono samples to the segment and returns how many it kept: the window is
// 30 s, so audio past WhisperSamples is dropped as LogMel would cut it.
func (s *MelStream) Append(pcm16k []float32) int {
	x := s.m.padded[melPad : melPad+WhisperSamples]
	k := min(len(pcm16k), WhisperSamples-s.n)
	for i, v := range pcm16k[:k] {
		x[s.n+i] = float64(v)
	}
	s.n += k
	return k
}

// Reset empties the stream for a new segment, keeping its buffers.
func (s *MelStream) Reset() {
	clear(s.m.padded)
	s.n, s.final, s.finalMax, s.floored = 0, 0, math.Inf(-1), WhisperFrames
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

	// The padding as the one-shot front end sees it: samples past n are zero (Append never wrote
	// them, Reset cleared them), both reflections taken afresh.
	reflectPad(m.padded, melPad)

	// Frames that became final since the last Compute are computed once and kept.
	if nf := finalFrames(s.n); nf > s.final {
		m.frames(w, s.final, nf)
		s.finalMax = max(s.finalMax, w.max)
		s.final = nf
	}
	globalMax := s.finalMax

	// The tail: frames that read real audio and padding are recomputed; the ones that read only
	// zero padding (window starts at or past n, and 30 s is far enough that the right reflection
	// is zero too) are the constant floor. Near 30 s every remaining frame is computed.
	busy := WhisperFrames
	if s.n <= WhisperSamples-2*WhisperNFFT {
		busy = min((s.n+melPad+WhisperHop-1)/WhisperHop, WhisperFrames) // first t with t·160−200 ≥ n
	}
	if busy > s.final {
		m.frames(w, s.final, busy)
		globalMax = max(globalMax, w.max)
	}
	if busy < WhisperFrames {
		// Only frames not already holding the floor are written: the all-padding frames shrink
		// as audio arrives, so after the first Compute of a segment this writes nothing.
		floor := math.Log10(max(0, melLogMin))
		from := max(busy, s.final)
		for mel := 0; mel < m.nMels; mel++ {
			row := m.spec[mel*WhisperFrames : (mel+1)*WhisperFrames]
			for t := from; t < s.floored; t++ {
				row[t] = floor
			}
		}
		s.floored = from
		globalMax = max(globalMax, floor)
	} else {
		s.floored = WhisperFrames
	}
	clampScale(dst, m.spec, globalMax)
	return dst
}
