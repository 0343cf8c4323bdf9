package session

import (
	"testing"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/wire"
)

// Between turns the buffer keeps a bounded tail of the silence a live microphone sends, and the
// timeline (audio_start_ms/audio_end_ms clock) and a later span keep their positions.
func TestInputBufferTrimQuietKeepsATail(t *testing.T) {
	var b inputBuffer
	if err := b.setFormat(wire.PCM16); err != nil {
		t.Fatal(err)
	}
	chunk := audio.Int16ToBytes(make([]int16, 480)) // 20 ms at 24 kHz
	for i := 0; i < 3000; i++ {                     // 60 s
		if _, err := b.append(chunk); err != nil {
			t.Fatal(err)
		}
		b.trimQuiet()
		if len(b.pcm) > 2*keepBetweenTurns+320 {
			t.Fatalf("after %d appends the buffer holds %d samples", i+1, len(b.pcm))
		}
	}
	if b.timeline < 60*hearRate-200 {
		t.Fatalf("timeline %d, want ≈ 60 s of samples", b.timeline)
	}
	if b.start+int64(len(b.pcm)) != b.timeline {
		t.Fatalf("start %d + %d buffered != timeline %d", b.start, len(b.pcm), b.timeline)
	}
	if got := len(b.raw) / 2 * 2 / 3; got > len(b.pcm)+2 || got < len(b.pcm)-2 { // 24 kHz bytes vs 16 kHz samples
		t.Fatalf("raw %d bytes does not match %d samples", len(b.raw), len(b.pcm))
	}
	_, span := b.takeSpan(b.timeline-hearRate, b.timeline)
	if len(span) != hearRate {
		t.Fatalf("the last second after trimming is %d samples", len(span))
	}
}
