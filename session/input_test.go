package session

import (
	"bytes"
	"math"
	"slices"
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

// Each append returns its own audio at 16 kHz, the new tail of the buffer, as a streaming
// resampler gives it; the raw bytes are kept as sent; a later append (the decode buffer reused,
// the 16 kHz buffer grown) leaves what earlier appends returned as it was; and what a step
// appends to the audio it was handed is its own, not the buffer's spare room.
func TestInputBufferAppendReturnsItsAudio(t *testing.T) {
	for _, f := range []wire.AudioFormat{wire.PCM16, wire.G711Ulaw} {
		var b inputBuffer
		if err := b.setFormat(f); err != nil {
			t.Fatal(err)
		}
		ref, err := audio.NewResampler(b.rate, hearRate)
		if err != nil {
			t.Fatal(err)
		}
		var raw []byte
		var got, want [][]float32
		var extended []float32 // the last append's audio with a sample added by whoever got it
		for i := range 200 {   // 4 s in 20 ms appends of a changing tone
			s := make([]int16, b.rate/50)
			for j := range s {
				s[j] = int16(9000 * math.Sin(float64(i*len(s)+j)*float64(300+i)/float64(b.rate)))
			}
			chunk := codecOf(f).Encode(s)
			samples, _ := decodeInput(f, chunk)
			pcm, err := b.append(chunk)
			if err != nil {
				t.Fatal(err)
			}
			if extended != nil && extended[len(extended)-1] != 99 {
				t.Fatalf("%v: append %d wrote over what a step appended to the audio it was handed", f, i)
			}
			extended = append(pcm, 99)
			raw = append(raw, chunk...)
			got, want = append(got, pcm), append(want, ref.Process(samples))
		}
		var all []float32
		for i := range got {
			if len(got[i]) != len(want[i]) {
				t.Fatalf("%v: append %d returned %d samples, want %d", f, i, len(got[i]), len(want[i]))
			}
			for j := range got[i] {
				if got[i][j] != want[i][j] {
					t.Fatalf("%v: append %d sample %d = %v, want %v", f, i, j, got[i][j], want[i][j])
				}
			}
			all = append(all, got[i]...)
		}
		if !slices.Equal(all, b.pcm) || !bytes.Equal(raw, b.raw) {
			t.Fatalf("%v: the buffer (%d samples, %d bytes) is not the appends' audio (%d, %d)", f, len(b.pcm), len(b.raw), len(all), len(raw))
		}
		if b.start+int64(len(b.pcm)) != b.timeline {
			t.Fatalf("%v: start %d + %d buffered != timeline %d", f, b.start, len(b.pcm), b.timeline)
		}
	}
}

// The buffers grow by doubling but never past what the buffer may hold (maxInputAudio and one
// more step): two minutes of 20 ms appends leave them no larger than that.
func TestInputBufferGrowsWithinItsBound(t *testing.T) {
	var b inputBuffer
	if err := b.setFormat(wire.PCM16); err != nil {
		t.Fatal(err)
	}
	chunk := audio.Int16ToBytes(make([]int16, 480)) // 20 ms at 24 kHz
	for range maxInputAudio / 20 {
		if _, err := b.append(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if most := (maxInputAudio + hearStep) * hearRate / 1000; cap(b.pcm) > most {
		t.Errorf("16 kHz buffer: capacity %d samples for %d, bound %d", cap(b.pcm), len(b.pcm), most)
	}
	if most := (maxInputAudio + hearStep) * 24000 / 1000 * 2; cap(b.raw) > most {
		t.Errorf("raw buffer: capacity %d bytes for %d, bound %d", cap(b.raw), len(b.raw), most)
	}
}
