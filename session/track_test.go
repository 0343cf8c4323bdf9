package session

import (
	"context"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/internal/testkit"
)

// recordingEars keeps every window it is asked to transcribe.
type recordingEars struct {
	mu    sync.Mutex
	heard [][]float32
}

func (r *recordingEars) Transcribe(ctx context.Context, pcm []float32) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.heard = append(r.heard, slices.Clone(pcm))
	return "hi", ctx.Err()
}

// maxDiff is the largest sample-by-sample difference of a and b (their lengths equal).
func maxDiff(a, b []float32) float64 {
	d := 0.0
	for i := range a {
		d = max(d, math.Abs(float64(a[i]-b[i])))
	}
	return d
}

// TestTrackAudioSkipsTheWireCodec: under a g711_ulaw session, track audio (a WebRTC call's)
// reaches the recogniser as the track's own 16 kHz samples, not μ-law-compressed on the way (it
// once took the append path: rendered in the session's input format, then decoded again). The
// committed item still keeps its audio in the input format for retrieve.
func TestTrackAudioSkipsTheWireCodec(t *testing.T) {
	testkit.CheckLeaks(t)
	ears := &recordingEars{}
	s, err := New(Config{Engines: Engines{Ears: ears}})
	if err != nil {
		t.Fatal(err)
	}
	tr := newFakeTransport(t, Media{TrackInput: true})
	defer converse(t, s, tr)()
	tr.until("session.created")
	tr.event(map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime",
		"audio": map[string]any{"input": map[string]any{"format": map[string]any{"type": "audio/pcmu"},
			"turn_detection": nil, "transcription": map[string]any{"model": "whisper-1"}}}}})
	tr.until("session.updated")

	// Half a second of a tone and its quiet overtone, 20 ms at a time.
	track := make([]float32, TrackRate/2)
	for i := range track {
		x := 2 * math.Pi * float64(i) / TrackRate
		track[i] = float32(0.3*math.Sin(440*x) + 0.002*math.Sin(3000*x))
	}
	for i := 0; i < len(track); i += TrackRate / 50 {
		tr.in <- Inbound{Audio: track[i : i+TrackRate/50]}
	}
	tr.event(map[string]any{"type": "input_audio_buffer.commit"})
	evs := tr.until("conversation.item.input_audio_transcription.completed")

	ears.mu.Lock()
	heard := ears.heard
	ears.mu.Unlock()
	if len(heard) != 1 || len(heard[0]) != len(track) {
		t.Fatalf("the recogniser heard %d windows; want one of %d samples", len(heard), len(track))
	}
	// What the old path did to the samples: μ-law and back.
	roundTrip, err := audio.Mulaw.Decode(audio.Mulaw.Encode(audio.Float32ToInt16(track)))
	if err != nil {
		t.Fatal(err)
	}
	if q := maxDiff(roundTrip, track); q < 1e-3 {
		t.Fatalf("μ-law costs these samples only %g: the test cannot tell", q)
	}
	if d := maxDiff(heard[0], track); d != 0 {
		t.Errorf("the recogniser heard the track's samples changed by up to %g (μ-law's round trip: %g); want them as they were",
			d, maxDiff(roundTrip, track))
	}
	if n, _ := retrievedAudio(t, tr, evs[len(evs)-1]["item_id"].(string)); n != len(track)/2 {
		t.Errorf("the committed item keeps %d bytes of G.711 (8 kHz); want %d", n, len(track)/2)
	}
}
