package bridge

import (
	"context"
	"errors"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/voiced/voiced/meter"
	"github.com/voiced/voiced/mind"
	"github.com/voiced/voiced/session"
	"github.com/voiced/voiced/speechcore"
	"github.com/voiced/voiced/speechcore/kokoro"
	"github.com/voiced/voiced/speechcore/runtime"
	"github.com/voiced/voiced/speechcore/squelch"
	"github.com/voiced/voiced/speechcore/whisper"
	"github.com/voiced/voiced/turn"
	"github.com/voiced/voiced/wire"
)

// fakeKokoro records the requests it is asked and speaks chunks, or fails with err.
type fakeKokoro struct {
	voices []string
	chunks [][]int16
	err    error
	asked  []kokoro.Request
}

func (f *fakeKokoro) Voices() []string { return f.voices }

func (f *fakeKokoro) Speak(ctx context.Context, req kokoro.Request, emit func(kokoro.Chunk) error) error {
	f.asked = append(f.asked, req)
	for i, pcm := range f.chunks {
		if err := emit(kokoro.Chunk{Index: i, PCM: pcm}); err != nil {
			return err
		}
	}
	return f.err
}

func voiceOn(k *fakeKokoro, passes *int) Voice {
	return Voice{
		kokoro: func() speaker {
			if k == nil {
				return nil
			}
			return k
		},
		observe: func(time.Duration) { *passes++ },
	}
}

// TestVoiceSpeaks: the session's voice name is matched to a mounted voice, each piece's PCM is
// handed on in order and its synthesis observed, and an error from emit stops it.
func TestVoiceSpeaks(t *testing.T) {
	k := &fakeKokoro{voices: []string{"af_heart", "am_adam"}, chunks: [][]int16{{1, 2}, {3}}}
	passes := 0
	v := voiceOn(k, &passes)
	var got [][]int16
	if err := v.Speak(context.Background(), "Hello. Bye.", "heart", 1.25, func(pcm []int16) error {
		got = append(got, pcm)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !slices.Equal(got[0], []int16{1, 2}) || !slices.Equal(got[1], []int16{3}) || passes != 2 {
		t.Fatalf("spoke %v with %d passes observed, want [[1 2] [3]] and 2", got, passes)
	}
	if r := k.asked[0]; r.Text != "Hello. Bye." || r.Voice != "af_heart" || r.Speed != 1.25 {
		t.Fatalf("asked Kokoro %+v, want the text, af_heart, speed 1.25", r)
	}
	if err := v.Speak(context.Background(), "x", "alloy", 1, func([]int16) error { return nil }); err != nil || k.asked[1].Voice != "" {
		t.Fatalf("a voice not mounted: %v, asked for %q, want \"\" (Kokoro's default)", err, k.asked[1].Voice)
	}
	stop := errors.New("client gone")
	if err := v.Speak(context.Background(), "x", "am_adam", 1, func([]int16) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("emit's error = %v, want it returned", err)
	}
}

// TestVoiceClampsSpeed: a speed Kokoro refuses speaks at its default (0) instead of failing the
// reply; one in range is passed as it is.
func TestVoiceClampsSpeed(t *testing.T) {
	for _, tc := range []struct {
		speed float64
		want  float32
	}{
		{0, kokoro.DefaultSpeed},
		{1, 1},
		{float64(kokoro.MinSpeed), kokoro.MinSpeed},
		{float64(kokoro.MaxSpeed), kokoro.MaxSpeed},
		{float64(kokoro.MaxSpeed) * 2, 0},
		{float64(kokoro.MinSpeed) / 2, 0},
		{-1, 0},
	} {
		k := &fakeKokoro{}
		passes := 0
		if err := voiceOn(k, &passes).Speak(context.Background(), "x", "", tc.speed, nil); err != nil {
			t.Fatal(err)
		}
		if got := k.asked[0].Speed; got != tc.want {
			t.Errorf("speed %v asked Kokoro for %v, want %v", tc.speed, got, tc.want)
		}
	}
}

// TestVoiceNothingToSay: text with nothing speakable is no error while the reply goes on
// (session.Voice's contract); once the reply is cancelled it is, and other errors pass as they
// are. Before Kokoro is loaded the voice answers speech_not_warm.
func TestVoiceNothingToSay(t *testing.T) {
	passes := 0
	nothing := voiceOn(&fakeKokoro{err: kokoro.ErrNothingToSay}, &passes)
	if err := nothing.Speak(context.Background(), "?!", "", 1, nil); err != nil {
		t.Fatalf("punctuation alone = %v, want nil", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := nothing.Speak(ctx, "?!", "", 1, nil); !errors.Is(err, kokoro.ErrNothingToSay) {
		t.Fatalf("punctuation alone, cancelled = %v, want ErrNothingToSay", err)
	}
	if err := voiceOn(&fakeKokoro{err: kokoro.ErrModelIO}, &passes).Speak(context.Background(), "x", "", 1, nil); !errors.Is(err, kokoro.ErrModelIO) {
		t.Fatalf("a model failure = %v, want it returned", err)
	}
	if err := voiceOn(nil, &passes).Speak(context.Background(), "x", "", 1, nil); !errors.Is(err, speechcore.ErrNotWarm) {
		t.Fatalf("no Kokoro = %v, want ErrNotWarm", err)
	}
}

// fakeWhisper records the requests it is asked and answers text.
type fakeWhisper struct {
	asked []whisper.Request
	mels  []int // len(mel) of each TranscribeMelAs
	err   error
}

func (f *fakeWhisper) TranscribeAs(ctx context.Context, pcm []float32, req whisper.Request) (whisper.Result, error) {
	f.asked = append(f.asked, req)
	return whisper.Result{Text: "pcm"}, f.err
}

func (f *fakeWhisper) TranscribeMelAs(ctx context.Context, mel []float32, req whisper.Request) (whisper.Result, error) {
	f.asked = append(f.asked, req)
	f.mels = append(f.mels, len(mel))
	return whisper.Result{Text: "mel"}, f.err
}

func (f *fakeWhisper) NumMels() int { return 128 }

func earsOn(w *fakeWhisper, observed *int) Ears {
	return Ears{
		whisper: func() hearer {
			if w == nil {
				return nil
			}
			return w
		},
		observe: func(whisper.Result) { *observed++ },
	}
}

// TestEarsQueueAsTheConversation: each transcription takes its conversation's place in Whisper's
// queue, a final or a partial; a plain Transcribe is a final of its own; each is observed.
func TestEarsQueueAsTheConversation(t *testing.T) {
	w := &fakeWhisper{}
	observed := 0
	e := earsOn(w, &observed)
	ctx := context.Background()
	if text, err := e.Transcribe(ctx, make([]float32, 16)); err != nil || text != "pcm" {
		t.Fatalf("Transcribe = %q %v", text, err)
	}
	if text, err := e.TranscribeAs(ctx, make([]float32, 16), session.Hearing{Conversation: "c1"}); err != nil || text != "pcm" {
		t.Fatalf("TranscribeAs = %q %v", text, err)
	}
	if text, err := e.TranscribeMel(ctx, make([]float32, 40), session.Hearing{Conversation: "c2", Partial: true}); err != nil || text != "mel" {
		t.Fatalf("TranscribeMel = %q %v", text, err)
	}
	want := []whisper.Request{{Kind: whisper.Final}, {Owner: "c1", Kind: whisper.Final}, {Owner: "c2", Kind: whisper.Partial}}
	if !slices.Equal(w.asked, want) || !slices.Equal(w.mels, []int{40}) || observed != 3 {
		t.Fatalf("asked %+v (mels %v, %d observed), want %+v, [40], 3", w.asked, w.mels, observed, want)
	}
	if e.NumMels() != 128 {
		t.Errorf("NumMels = %d, want the engine's 128", e.NumMels())
	}
	w.err = whisper.ErrSuperseded
	if _, err := e.TranscribeAs(ctx, nil, session.Hearing{Partial: true}); !errors.Is(err, whisper.ErrSuperseded) || observed != 3 {
		t.Fatalf("a failed decode = %v (%d observed), want ErrSuperseded and nothing observed", err, observed)
	}
}

// TestEarsBeforeWhisper: before Whisper is loaded the ears answer speech_not_warm and 80 mel bands.
func TestEarsBeforeWhisper(t *testing.T) {
	observed := 0
	e := earsOn(nil, &observed)
	if _, err := e.Transcribe(context.Background(), nil); !errors.Is(err, speechcore.ErrNotWarm) {
		t.Errorf("Transcribe = %v, want ErrNotWarm", err)
	}
	if _, err := e.TranscribeMel(context.Background(), nil, session.Hearing{}); !errors.Is(err, speechcore.ErrNotWarm) {
		t.Errorf("TranscribeMel = %v, want ErrNotWarm", err)
	}
	if e.NumMels() != 80 {
		t.Errorf("NumMels = %d, want 80", e.NumMels())
	}
}

// TestEnginesWiring: without a service every socket is refused as not mounted; a service not
// yet loaded refuses as not warm and has no Silero to lend; without a meter nothing is metered
// or admitted; with one, admission and budget are the meter's and records reach it.
func TestEnginesWiring(t *testing.T) {
	ctx := context.Background()
	e := Engines(nil, mind.Echo{}, nil)
	if !errors.Is(e.Ready(), speechcore.ErrNotMounted) || e.Meter != nil || e.Admit != nil || e.Budget != nil || e.Ears != nil {
		t.Fatalf("Engines(nil, nil) = %+v", e)
	}
	if _, ok := e.Mind.(mind.Echo); !ok {
		t.Errorf("Mind = %T, want the one given", e.Mind)
	}

	svc, err := speechcore.New(speechcore.Config{})
	if err != nil {
		t.Fatal(err)
	}
	store, err := meter.OpenSQLite(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	m := meter.New(store, meter.Config{QuotaSecondsPerDay: 2, FlushEvery: time.Hour})
	defer m.Close(ctx)
	e = Engines(svc, mind.Echo{}, m)
	if !errors.Is(e.Ready(), speechcore.ErrNotMounted) {
		t.Errorf("Ready of an unmounted service = %v", e.Ready())
	}
	if _, err := e.NewSquelch(); !errors.Is(err, errNoSilero) {
		t.Errorf("NewSquelch before Silero = %v", err)
	}
	if _, err := e.NewTurnDetector(wire.TurnDetection{Type: wire.TurnServerVAD}, nil); err == nil {
		t.Errorf("NewTurnDetector before Silero = nil error")
	}
	if _, err := e.Ears.Transcribe(ctx, nil); !errors.Is(err, speechcore.ErrNotWarm) {
		t.Errorf("Ears before Whisper = %v", err)
	}
	p := session.Principal{Subject: "gus", Org: "acme"}
	if err := e.Admit(ctx, p); err != nil {
		t.Fatalf("Admit = %v", err)
	}
	if err := e.Meter.Record(ctx, session.Usage{Subject: "gus", Org: "acme", Heard: 1500 * time.Millisecond, Spoken: time.Second, TurnEnded: true}); err != nil {
		t.Fatal(err)
	}
	rows, err := store.Usage(ctx, meter.Filter{Principal: "gus"})
	if err != nil || len(rows) != 1 || rows[0].Door != meter.DoorConversation || rows[0].Org != "acme" || rows[0].Heard != 1.5 || rows[0].Spoken != 1 {
		t.Fatalf("a turn's record in the store: %+v %v, want gus/acme conversation 1.5 + 1 s", rows, err)
	}
	if left, limited, err := e.Budget(ctx, p); err != nil || !limited || left != 0 {
		t.Errorf("Budget = %v %v %v, want 0 left, limited", left, limited, err)
	}
	if err := e.Admit(ctx, p); err == nil {
		t.Errorf("Admit over quota = nil, want quota_exceeded")
	}
	release := e.Meter.(session.MeterHolder).Hold()
	release()
}

// TestSharedSquelchOnePass: the squelch and a turn detector built on it read one Silero pass
// (real model; skipped without the Makefile's variables).
func TestSharedSquelchOnePass(t *testing.T) {
	lib, model := runtime.LibPathFromEnv(), os.Getenv("VOICED_SILERO_MODEL")
	if lib == "" || model == "" {
		t.Skip("VOICED_ORT_LIB and VOICED_SILERO_MODEL unset: run through make, or eval \"$(make -s env)\"")
	}
	env, err := runtime.Open(runtime.Config{LibPath: lib})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	m, err := squelch.Load(env, model)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	q, err := NewSharedSquelch(m)
	if err != nil {
		t.Fatal(err)
	}
	var _ turn.Speech = q
	d, err := session.TurnDetectorOn(wire.TurnDetection{Type: wire.TurnServerVAD}, nil, q)
	if err != nil {
		t.Fatal(err)
	}
	pcm := make([]float32, 16000) // one second of silence, in 20 ms pushes
	for i := 0; i < len(pcm); i += 320 {
		if _, err := d.Feed(pcm[i:i+320], int64(i)); err != nil {
			t.Fatal(err)
		}
		if passed, err := q.Push(pcm[i : i+320]); err != nil || len(passed) != 0 {
			t.Fatalf("silence passed the squelch: %d samples, %v", len(passed), err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
}
