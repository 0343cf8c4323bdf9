package whisper

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/speechcore/fixture"
)

// spanishPhonemes is espeak-ng's es voice for "Hola, ¿cómo estás? El perro corre rápido.", as
// Kokoro's EspeakG2P passes it on (ties removed).
const spanishPhonemes = "ˈola, kˈomo estˈas? el pˈero kˈore rˈapiðo."

func speak16k(t testing.TB, phonemes string) ([]int, []float32) {
	t.Helper()
	ids := fixture.PhonemeIDs(phonemes)
	return ids, audio.Resample(speakFixture(t, ids), fixture.SampleRate, audio.WhisperSampleRate)
}

// TestLanguageTold: each of the fixture's languages, told, decodes its speech through the real
// mel front end and decode loop; the other language's token garbles it (forcing <|en|> fails).
func TestLanguageTold(t *testing.T) {
	e := loadEngine(t, Options{})
	cases := []struct{ lang, other, phonemes string }{
		{"en", "es", roundTripPhonemes},
		{"es", "en", spanishPhonemes},
	}
	for _, c := range cases {
		t.Run(c.lang, func(t *testing.T) {
			ids, pcm := speak16k(t, c.phonemes)
			if got := fixture.LanguageOf(ids); got != c.lang {
				t.Fatalf("the fixture hears %s in %q", got, c.phonemes)
			}
			res, err := e.TranscribeAs(context.Background(), pcm, Request{Language: c.lang})
			if err != nil {
				t.Fatal(err)
			}
			if res.Text != fixture.Phonemes(ids) || res.Language != c.lang || res.Detected {
				t.Fatalf("told %s: %q (%s, detected %v), want %q", c.lang, res.Text, res.Language, res.Detected, fixture.Phonemes(ids))
			}
			wrong, err := e.TranscribeAs(context.Background(), pcm, Request{Language: c.other})
			if err != nil {
				t.Fatal(err)
			}
			if wrong.Text == res.Text {
				t.Fatalf("told %s on %s speech still reads it: the prompt's language token is not honoured", c.other, c.lang)
			}
		})
	}
}

// TestLanguageDetected: "auto" on a final reads the decoder's language-token scores (one extra
// decoder pass) and decodes in the language found; a partial never detects.
func TestLanguageDetected(t *testing.T) {
	e := loadEngine(t, Options{})
	for _, c := range []struct{ lang, phonemes string }{{"en", roundTripPhonemes}, {"es", spanishPhonemes}} {
		ids, pcm := speak16k(t, c.phonemes)
		res, err := e.TranscribeAs(context.Background(), pcm, Request{Language: "auto"})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Detected || res.Language != c.lang || res.Text != fixture.Phonemes(ids) {
			t.Fatalf("auto on %s: language %q detected %v text %q", c.lang, res.Language, res.Detected, res.Text)
		}
		if res.Steps != len(ids)+2 || res.Detect <= 0 {
			t.Errorf("auto: %d decoder steps (want %d: detection + one per phoneme + end), detect %v", res.Steps, len(ids)+2, res.Detect)
		}
		partial, err := e.TranscribeAs(context.Background(), pcm, Request{Language: "auto", Kind: Partial, Owner: "p"})
		if err != nil {
			t.Fatal(err)
		}
		if partial.Detected || partial.Language != "en" || partial.Steps != len(ids)+1 && c.lang == "en" {
			t.Errorf("partial auto: detected %v language %s steps %d", partial.Detected, partial.Language, partial.Steps)
		}
	}
	// A server default of auto detects requests that name none.
	auto := loadEngine(t, Options{Language: "auto"})
	_, pcm := speak16k(t, spanishPhonemes)
	res, err := auto.Transcribe(context.Background(), pcm)
	if err != nil || res.Language != "es" || !res.Detected {
		t.Fatalf("default auto: %s %v %v", res.Language, res.Detected, err)
	}
}

// TestLanguageRefusals: a language Whisper does not know, one the mount lacks, and any but English
// on an English-only checkpoint are refused by name before anything is queued.
func TestLanguageRefusals(t *testing.T) {
	e := loadEngine(t, Options{SkipWarmup: true})
	if _, err := e.TranscribeAs(context.Background(), make([]float32, 100), Request{Language: "klingon"}); !errors.Is(err, ErrUnknownLanguage) {
		t.Fatalf("klingon: %v", err)
	}
	_, err := e.TranscribeAs(context.Background(), make([]float32, 100), Request{Language: "fr"})
	if !errors.Is(err, ErrLanguageNotServed) || !strings.Contains(err.Error(), "en, es") {
		t.Fatalf("fr on the fixture: %v", err)
	}
	if got, err := e.CheckLanguage("Spanish"); got != "es" || err != nil {
		t.Fatalf("Spanish: %q %v", got, err)
	}
	if got, err := e.CheckLanguage("es-MX"); got != "es" || err != nil {
		t.Fatalf("es-MX: %q %v", got, err)
	}
	if !slices.Equal(e.Languages(), []string{"en", "es"}) || !e.CanDetect() {
		t.Fatalf("languages %v detect %v", e.Languages(), e.CanDetect())
	}
	if _, err := Load(context.Background(), testEnv, whisperDir(), Options{Language: "fr", SkipWarmup: true}); !errors.Is(err, ErrLanguageNotServed) {
		t.Fatalf("default fr: %v", err)
	}

	dir := englishOnlyDir(t)
	en, err := Load(context.Background(), testEnv, dir, Options{SkipWarmup: true, ModelID: "whisper-fixture.en"})
	if err != nil {
		t.Fatal(err)
	}
	defer en.Close()
	_, err = en.TranscribeAs(context.Background(), make([]float32, 100), Request{Language: "es"})
	if !errors.Is(err, ErrLanguageNotServed) || !strings.Contains(err.Error(), "English-only") {
		t.Fatalf("es on English-only: %v", err)
	}
	if en.CanDetect() || !slices.Equal(en.Languages(), []string{"en"}) {
		t.Fatalf("English-only: detect %v languages %v", en.CanDetect(), en.Languages())
	}
}

// TestTimestampSegments: two utterances with a pause between them decode, with timestamps, to two
// segments whose times are where the speech is (the fixture's 80 ms slots, exact to 20 ms).
func TestTimestampSegments(t *testing.T) {
	e := loadEngine(t, Options{})
	first, second := "hˈɛloʊ wˈɜɹld.", "ɡʊd mˈɔːɹnɪŋ."
	a, b := fixture.PhonemeIDs(first), fixture.PhonemeIDs(second)
	gap := 5 // phoneme slots of silence (400 ms)
	wave := append(fixture.Waveform(a, 1), make([]float32, gap*fixture.PhonemeSamples)...)
	wave = append(wave, fixture.Waveform(b, 1)...)
	pcm := audio.Resample(wave, fixture.SampleRate, audio.WhisperSampleRate)
	res, err := e.TranscribeAs(context.Background(), pcm, Request{Language: "en", Timestamps: true, Logprobs: true})
	if err != nil {
		t.Fatal(err)
	}
	slot := 0.08
	want := []Segment{
		{Start: 0, End: float64(len(a)) * slot, Text: fixture.Phonemes(a)},
		{Start: float64(len(a)+gap) * slot, End: float64(len(a)+gap+len(b)) * slot, Text: fixture.Phonemes(b)},
	}
	if len(res.Segments) != len(want) {
		t.Fatalf("segments %+v, want %d", res.Segments, len(want))
	}
	for i, w := range want {
		g := res.Segments[i]
		if g.Text != w.Text || math.Abs(g.Start-w.Start) > 0.021 || math.Abs(g.End-w.End) > 0.021 {
			t.Errorf("segment %d: %.2f–%.2f %q, want %.2f–%.2f %q", i, g.Start, g.End, g.Text, w.Start, w.End, w.Text)
		}
		if g.AvgLogprob >= 0 || g.AvgLogprob < -10 {
			t.Errorf("segment %d avg_logprob %g", i, g.AvgLogprob)
		}
	}
	if res.Text != fixture.Phonemes(a)+fixture.Phonemes(b) || len(res.Tokens) != len(a)+len(b) {
		t.Errorf("text %q tokens %d", res.Text, len(res.Tokens))
	}
	// Logprobs: one per text token, each the log of a probability.
	if len(res.Logprobs) != len(a)+len(b) {
		t.Fatalf("%d logprobs for %d tokens", len(res.Logprobs), len(a)+len(b))
	}
	var joined string
	for _, lp := range res.Logprobs {
		if lp.Logprob > 0 || math.IsNaN(lp.Logprob) {
			t.Errorf("logprob %g of %q", lp.Logprob, lp.Token)
		}
		joined += lp.Token
	}
	if joined != res.Text {
		t.Errorf("logprob tokens spell %q, want %q", joined, res.Text)
	}
	// Without timestamps the same audio reads the first utterance only: silence ends the text.
	plain, err := e.TranscribeAs(context.Background(), pcm, Request{Language: "en"})
	if err != nil || plain.Segments != nil || plain.Text != fixture.Phonemes(a) {
		t.Fatalf("no timestamps: %q %+v %v", plain.Text, plain.Segments, err)
	}
}

// englishOnlyDir is an English-only checkpoint: the fixture's files with is_multilingual false
// and no lang_to_id, as whisper-small.en's generation_config.json.
func englishOnlyDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{FileEncoder, FileDecoderMerged, FileTokenizer, FileConfig, FileGenerationConfig} {
		data, err := os.ReadFile(filepath.Join(whisperDir(), f))
		if err != nil {
			t.Fatal(err)
		}
		if f == FileGenerationConfig {
			var gen map[string]any
			json.Unmarshal(data, &gen)
			gen["is_multilingual"] = false
			delete(gen, "lang_to_id")
			data, _ = json.Marshal(gen)
		}
		os.WriteFile(filepath.Join(dir, f), data, 0o644)
	}
	return dir
}
