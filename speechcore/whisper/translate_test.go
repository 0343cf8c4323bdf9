package whisper

import (
	"context"
	"errors"
	"testing"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/speechcore/fixture"
)

// TestTranslate (issue 21): Request.Translate puts <|translate|> in the prompt. The fixture
// Whisper's translation is a defined property (fixture.TranslateIDs: Spanish signature phonemes
// read as English ones) that only that token gives, so Spanish speech detected as es reads back
// as its translation, with and without timestamps; English speech reads as itself; told
// <|transcribe|> (the mutation) the Spanish text comes back instead. An English-only checkpoint
// refuses translation by name.
func TestTranslate(t *testing.T) {
	e := loadEngine(t, Options{})
	es := fixture.PhonemeIDs("ˈola, kˈomo estˈas?")
	want := fixture.Phonemes(fixture.TranslateIDs(es))
	if want == fixture.Phonemes(es) {
		t.Fatal("the fixture's translation changes nothing")
	}
	pcm := audio.Resample(fixture.Waveform(es, 1), fixture.SampleRate, audio.WhisperSampleRate)
	for _, ts := range []bool{false, true} {
		res, err := e.TranscribeAs(context.Background(), pcm, Request{Language: LanguageAuto, Translate: true, Timestamps: ts})
		if err != nil {
			t.Fatal(err)
		}
		if res.Text != want || res.Language != "es" || !res.Detected {
			t.Fatalf("timestamps %v: %q in %q, want %q in es", ts, res.Text, res.Language, want)
		}
	}
	res, err := e.TranscribeAs(context.Background(), pcm, Request{Language: "es"})
	if err != nil || res.Text != fixture.Phonemes(es) {
		t.Fatalf("transcribed: %q %v", res.Text, err)
	}
	en := fixture.PhonemeIDs("hˈɛloʊ wˈɜɹld.")
	enPCM := audio.Resample(fixture.Waveform(en, 1), fixture.SampleRate, audio.WhisperSampleRate)
	res, err = e.TranscribeAs(context.Background(), enPCM, Request{Language: LanguageAuto, Translate: true})
	if err != nil || res.Text != fixture.Phonemes(en) || res.Language != "en" {
		t.Fatalf("English translated: %q in %q %v", res.Text, res.Language, err)
	}

	dir := englishOnlyDir(t)
	eng, err := Load(context.Background(), testEnv, dir, Options{SkipWarmup: true, ModelID: "whisper-fixture.en"})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	if _, err := eng.TranscribeAs(context.Background(), enPCM, Request{Translate: true}); !errors.Is(err, ErrTranslateNotServed) {
		t.Fatalf("translate on English-only: %v", err)
	}
}
