package audio

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func noisySpeechLike(rng *rand.Rand, n int) []float32 {
	pcm := make([]float32, n)
	for i := range pcm {
		// loud and quiet stretches so the window maximum moves as audio arrives
		gain := 0.02
		if (i/4000)%3 == 1 {
			gain = 0.3 * rng.Float64()
		}
		pcm[i] = float32(rng.NormFloat64() * gain)
	}
	return pcm
}

// TestMelStreamEqualsLogMel: appending the audio in random pieces and computing after each gives
// exactly (bit for bit) LogMel of the audio so far, at every cut point, up to and past 30 s.
func TestMelStreamEqualsLogMel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		seed   uint64
		total  int
		maxCut int
	}{
		{1, WhisperSamples / 6, 7000},      // 5 s in cuts up to ~0.4 s
		{2, 6000, 200},                     // short cuts around the first frames (n < 200 too)
		{3, WhisperSamples + 5000, 120000}, // through the 30 s edge and past it
	} {
		t.Run(fmt.Sprint(tc.seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(tc.seed, 42))
			pcm := noisySpeechLike(rng, tc.total)
			s := NewMelStream(80)
			one := NewMel(80)
			var got, want []float32
			checks := 0
			for off := 0; off < len(pcm); {
				cut := 1 + rng.IntN(tc.maxCut)
				end := min(off+cut, len(pcm))
				s.Append(pcm[off:end])
				off = end
				if tc.seed == 1 && rng.IntN(3) != 0 && off < len(pcm) {
					continue // Compute not called after every Append
				}
				got = s.Compute(got)
				want = one.Compute(want, pcm[:off])
				checks++
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("after %d samples: band %d frame %d = %v, one-shot %v", off, i/WhisperFrames, i%WhisperFrames, got[i], want[i])
					}
				}
			}
			if want := min(len(pcm), WhisperSamples); s.Len() != want {
				t.Fatalf("Len = %d, want %d", s.Len(), want)
			}
			t.Logf("%d cut points checked", checks)
		})
	}
}

// TestMelStreamReset: after Reset a new segment's features do not carry the old one's frames or max.
func TestMelStreamReset(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	loud := noisySpeechLike(rng, 64000)
	for i := range loud {
		loud[i] *= 3
	}
	quiet := noisySpeechLike(rng, 16000)
	s := NewMelStream(80)
	s.Append(loud)
	s.Compute(nil)
	s.Reset()
	s.Append(quiet)
	got := s.Compute(nil)
	want := LogMel(quiet, 80)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("after Reset: index %d = %v, one-shot %v", i, got[i], want[i])
		}
	}
}

// BenchmarkMelPartial: the mel of one partial that adds 1 s to an open segment of 5 s, incremental
// (MelStream) against the whole window each time (one-core Mel, the former partial path).
func BenchmarkMelPartial(b *testing.B) {
	rng := rand.New(rand.NewPCG(9, 10))
	pcm := noisySpeechLike(rng, 6*WhisperSampleRate)
	head, second := pcm[:5*WhisperSampleRate], pcm[5*WhisperSampleRate:]
	b.Run("incremental", func(b *testing.B) {
		s := NewMelStream(80)
		dst := make([]float32, 80*WhisperFrames)
		for b.Loop() {
			b.StopTimer()
			s.Reset()
			s.Append(head)
			s.Compute(dst)
			b.StartTimer()
			s.Append(second)
			s.Compute(dst)
		}
	})
	b.Run("whole window one core", func(b *testing.B) {
		m := NewMel(80)
		m.workers = m.workers[:1]
		dst := make([]float32, 80*WhisperFrames)
		for b.Loop() {
			m.Compute(dst, pcm)
		}
	})
}

// TestMelStreamHoldsWhatItsSegmentNeeds: a short segment's buffers are a small part of a whole
// window's (padded audio 1.9 MB + frames 1.9 MB for 80 bands), and they reach that only at 30 s.
func TestMelStreamHoldsWhatItsSegmentNeeds(t *testing.T) {
	t.Parallel()
	held := func(s *MelStream) int { return 4*cap(s.m.padded) + 8*cap(s.m.spec) }
	whole := 4*melPadded + 8*80*WhisperFrames
	rng := rand.New(rand.NewPCG(7, 8))
	s := NewMelStream(80)
	var dst []float32
	for range 6 { // 3 s in 0.5 s partials
		s.Append(noisySpeechLike(rng, WhisperSampleRate/2))
		dst = s.Compute(dst)
	}
	if got := held(s); got > whole/8 {
		t.Fatalf("a 3 s segment holds %d bytes, want at most %d (1/8 of a whole window's %d)", got, whole/8, whole)
	}
	t.Logf("3 s segment: %d bytes; whole window %d", held(s), whole)
	s.Reset()
	s.Append(noisySpeechLike(rng, WhisperSamples))
	s.Compute(dst)
	if got := held(s); got < whole {
		t.Fatalf("a 30 s segment holds %d bytes, want the whole window's %d", got, whole)
	}
}
