package session

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/internal/testkit"
)

// melEars "hears" features: its text is a digest of the log-mel a decode sees, so a partial
// decoded through the turn's MelStream and a whole-window decode read the same only when their
// features are equal bit for bit.
type melEars struct{ mels, wholes atomic.Int64 }

func (e *melEars) NumMels() int { return 80 }

func (e *melEars) Transcribe(ctx context.Context, pcm []float32) (string, error) {
	e.wholes.Add(1)
	return melDigest(audio.LogMel(pcm, 80)), ctx.Err()
}

func (e *melEars) TranscribeMel(ctx context.Context, mel []float32, _ Hearing) (string, error) {
	e.mels.Add(1)
	return melDigest(mel), ctx.Err()
}

func melDigest(mel []float32) string {
	h := sha256.New()
	for _, v := range mel {
		h.Write(binary.LittleEndian.AppendUint32(nil, math.Float32bits(v)))
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

func speechLike(seed uint64, n int) []float32 {
	r := rand.New(rand.NewPCG(seed, 2))
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(0.3*math.Sin(2*math.Pi*float64(200+seed*40)*float64(i)/hearRate) + 0.05*r.NormFloat64())
	}
	return out
}

// A turn's partials decode through its MelStream with the same text as a whole-window decode
// of the turn so far, computing only the new audio's frames; a new turn (gen) restarts the stream
// even when its audio is longer than what the stream holds; a turn past 30 s decodes whole.
func TestPartialMelEqualsWholeWindow(t *testing.T) {
	ears := &melEars{}
	var m partialMel
	ctx := context.Background()
	check := func(gen int64, pcm []float32, step int) {
		t.Helper()
		for end := step; end <= len(pcm); end += step {
			got, err := m.transcribe(ctx, ears, Hearing{Partial: true}, gen, 0, pcm[:end], false)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := ears.Transcribe(ctx, pcm[:end])
			if got != want {
				t.Fatalf("turn %d after %d samples: partial %s, whole-window decode %s", gen, end, got, want)
			}
			if m.stream == nil || m.stream.Len() != end || m.gen != gen {
				t.Fatalf("turn %d after %d samples: not decoded through the turn's MelStream", gen, end)
			}
		}
	}
	check(1, speechLike(1, 3*hearRate), partialCadence)
	// The next turn's first partial holds more audio than the last turn's stream: only the turn
	// tells them apart.
	check(2, speechLike(2, 4*hearRate), 3*hearRate+partialCadence/3)
	if ears.mels.Load() != 7 {
		t.Fatalf("%d decodes through features, want 7", ears.mels.Load())
	}
	before := ears.mels.Load()
	if _, err := m.transcribe(ctx, ears, Hearing{Partial: true}, 3, 0, speechLike(3, audio.WhisperSamples), true); err != nil {
		t.Fatal(err)
	}
	if ears.mels.Load() != before {
		t.Fatal("a slid window (turn past 30 s) decoded through the MelStream")
	}
}

// A committed turn's final reuses the stream its partials built: the same features bit for bit
// as a whole decode of the committed audio, computing only what the partials had not; another
// turn, another start sample, or a stream past the committed audio is not served (the caller
// decodes the whole window).
func TestPartialMelServesTheFinal(t *testing.T) {
	ears := &melEars{}
	ctx := context.Background()
	pcm := speechLike(4, 3*hearRate)
	partials := func(m *partialMel, gen, start int64, upTo int) {
		t.Helper()
		for end := partialCadence; end <= upTo; end += partialCadence {
			if _, err := m.transcribe(ctx, ears, Hearing{Partial: true}, gen, start, pcm[:end], false); err != nil {
				t.Fatal(err)
			}
		}
	}
	var m partialMel
	partials(&m, 1, 4000, 2*hearRate)
	wholes := ears.wholes.Load()
	got, ok, err := m.final(ctx, ears, Hearing{}, 1, 4000, pcm)
	if err != nil || !ok {
		t.Fatalf("final = %v, %v: not served by the turn's stream", ok, err)
	}
	if want, _ := ears.Transcribe(ctx, pcm); got != want {
		t.Fatalf("final through the stream %s, whole decode %s", got, want)
	}
	if ears.wholes.Load() != wholes+1 { // the one just made for want
		t.Fatal("the final decoded the whole window")
	}
	for _, tc := range []struct {
		name       string
		gen, start int64
		pcm        []float32
	}{
		{"another turn", 2, 4000, pcm},
		{"another start sample", 1, 4160, pcm},
		{"the stream holds more than the committed audio", 1, 4000, pcm[:hearRate]},
		{"past one window", 1, 4000, speechLike(4, audio.WhisperSamples+1)},
	} {
		var m partialMel
		partials(&m, 1, 4000, 2*hearRate)
		if _, ok, _ := m.final(ctx, ears, Hearing{}, tc.gen, tc.start, tc.pcm); ok {
			t.Errorf("%s: served by the stream", tc.name)
		}
	}
	var none partialMel
	if _, ok, _ := none.final(ctx, ears, Hearing{}, 1, 0, pcm); ok {
		t.Error("served without a stream")
	}
}

// The conversation's partial decodes (streamed transcription deltas) go through the features
// when the Ears take them, and so does the final: it reuses the turn's stream.
func TestConversationPartialsThroughMel(t *testing.T) {
	testkit.CheckLeaks(t)
	ears := &melEars{}
	s, err := New(Config{Engines: Engines{Ears: ears, Voice: fakeVoice{}, NewTurnDetector: newEnergyDetector}})
	if err != nil {
		t.Fatal(err)
	}
	tr := newFakeTransport(t, Media{TrackInput: true})
	end := converse(t, s, tr)
	tr.until("session.created")
	tr.event(map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime",
		"audio": map[string]any{"input": map[string]any{"transcription": map[string]any{"model": "whisper-1"},
			"turn_detection": map[string]any{"type": "server_vad"}}}}})
	tr.until("session.updated")
	for i := range 100 { // 1.6 s of speech, then silence
		tr.in <- Inbound{Audio: tone16(20, i < 80)}
	}
	evs := tr.until("response.done")
	if !strings.Contains(typesOf(evs), "conversation.item.input_audio_transcription.delta") {
		t.Errorf("no transcription delta: %s", typesOf(evs))
	}
	end()
	if ears.mels.Load() < 2 || ears.wholes.Load() != 0 {
		t.Errorf("%d decodes through features, %d whole decodes: want the partials and the final through features", ears.mels.Load(), ears.wholes.Load())
	}
	for _, e := range evs {
		if e["type"] == "conversation.item.input_audio_transcription.completed" && e["transcript"] == "" {
			t.Errorf("an empty final transcript: %v", e)
		}
	}
}
