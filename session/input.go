package session

import (
	"fmt"

	"github.com/voiced/voiced/speechcore/audio"
	"github.com/voiced/voiced/wire"
)

// hearRate is the rate turn detection, the squelch and Whisper hear at; the session's timeline
// counts samples at it.
const hearRate = 16000

// speakRate is the rate the Voice speaks at and a Player plays.
const speakRate = 24000

// codecOf is the speechcore/audio encoding of a session audio format.
func codecOf(f wire.AudioFormat) audio.Encoding {
	switch f {
	case wire.G711Ulaw:
		return audio.Mulaw
	case wire.G711Alaw:
		return audio.Alaw
	}
	return audio.PCM16
}

// minCommitMs is the least audio a commit takes (OpenAI's rule, docs §9).
const minCommitMs = 100

// inputBuffer is the user audio not yet committed, in the session's input format (raw) and at
// 16 kHz (pcm). Owned by the input goroutine.
type inputBuffer struct {
	format    wire.AudioFormat
	rate      int
	resampler *audio.Resampler
	raw       []byte
	pcm       []float32
	start     int64 // timeline sample of pcm[0]
	timeline  int64 // 16 kHz samples heard in this session (audio_start_ms / audio_end_ms clock)
	// speechStart is the timeline sample speech_started named (prefix padding included).
	speechStart int64
	// track converts track audio (Media.TrackInput) from trackRate to the format's rate.
	track     *audio.Resampler
	trackRate int
	trackTo   int
}

// fromTrack renders track audio (PCM16 at rate) in the session's input format, so that it takes
// the path an append's audio takes.
func (b *inputBuffer) fromTrack(pcm []int16, rate int) ([]byte, error) {
	if rate != b.rate {
		if b.track == nil || b.trackRate != rate || b.trackTo != b.rate {
			r, err := audio.NewResampler(rate, b.rate)
			if err != nil {
				return nil, fmt.Errorf("track resampler: %w", err)
			}
			b.track, b.trackRate, b.trackTo = r, rate, b.rate
		}
		pcm = audio.Float32ToInt16(b.track.Process(audio.Int16ToFloat32(pcm)))
	}
	return codecOf(b.format).Encode(pcm), nil
}

func (b *inputBuffer) setFormat(f wire.AudioFormat) error {
	if b.resampler != nil && b.format == f {
		return nil
	}
	r, err := audio.NewResampler(f.SampleRate(), hearRate)
	if err != nil {
		return fmt.Errorf("input resampler: %w", err)
	}
	b.format, b.rate, b.resampler = f, f.SampleRate(), r
	return nil
}

// decodeInput turns one append's bytes into samples at the format's rate.
func decodeInput(f wire.AudioFormat, data []byte) ([]float32, error) {
	return codecOf(f).Decode(data)
}

// append adds one append's audio and returns it at 16 kHz.
func (b *inputBuffer) append(data []byte) ([]float32, error) {
	samples, err := decodeInput(b.format, data)
	if err != nil {
		return nil, err
	}
	b.raw = append(b.raw, data...)
	pcm := b.resampler.Process(samples)
	if len(b.pcm) == 0 {
		b.start = b.timeline
	}
	b.pcm = append(b.pcm, pcm...)
	b.timeline += int64(len(pcm))
	return pcm, nil
}

// bufferedMs is how much audio is waiting, by the client's own bytes.
func (b *inputBuffer) bufferedMs() float64 { return b.format.Millis(len(b.raw)) }

// takeAll empties the buffer and returns its audio (raw and 16 kHz).
func (b *inputBuffer) takeAll() ([]byte, []float32) {
	raw, pcm := b.raw, b.pcm
	b.raw, b.pcm = nil, nil
	b.start = b.timeline
	return raw, pcm
}

// takeSpan returns the audio between timeline samples from and to and keeps what follows to.
func (b *inputBuffer) takeSpan(from, to int64) ([]byte, []float32) {
	n := int64(len(b.pcm))
	lo := min(max(from-b.start, 0), n)
	hi := min(max(to-b.start, lo), n)
	if n == 0 {
		return nil, nil
	}
	bps := int64(b.format.BytesPerSample())
	rawAt := func(i int64) int64 { return min(i*int64(len(b.raw))/n/bps*bps, int64(len(b.raw))) }
	raw := append([]byte(nil), b.raw[rawAt(lo):rawAt(hi)]...)
	pcm := append([]float32(nil), b.pcm[lo:hi]...)
	b.raw = append([]byte(nil), b.raw[rawAt(hi):]...)
	b.pcm = append([]float32(nil), b.pcm[hi:]...)
	b.start += hi
	return raw, pcm
}

// keepBetweenTurns is the audio kept while turn detection says nobody is speaking: more than any
// speech_started reaches back (prefix padding plus the detector's own lag), far less than a session.
const keepBetweenTurns = 5 * hearRate

// trimQuiet drops audio older than keepBetweenTurns. It runs only between turns under a detector,
// whose commits never reach back further, so the buffer no longer grows with the silence a live
// microphone sends (600 s of it was ~67 MB). It trims once twice the keep has built up, so the
// copy it makes costs a few bytes per sample heard.
func (b *inputBuffer) trimQuiet() {
	if int64(len(b.pcm)) <= 2*keepBetweenTurns {
		return
	}
	b.takeSpan(b.start, b.timeline-keepBetweenTurns)
}

// clear drops the buffer.
func (b *inputBuffer) clear() {
	b.raw, b.pcm = nil, nil
	b.start = b.timeline
}

// sampleMs converts a timeline sample to milliseconds, for the wire (audio_start_ms, audio_end_ms).
func sampleMs(s int64) int64 { return s * 1000 / hearRate }
