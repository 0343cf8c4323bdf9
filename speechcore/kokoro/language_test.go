package kokoro

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/voiced/voiced/speechcore/fixture"
)

// TestSpanishVoiceSpeaksSpanish: an e voice phonemises through espeak-ng's es voice and misaki's
// EspeakG2P mapping, and the fixture Kokoro speaks exactly those phonemes (read back from tones).
func TestSpanishVoiceSpeaksSpanish(t *testing.T) {
	e := engine(t)
	ps, err := e.PhonemesFor("ef_dora", "Hola, ¿cómo estás? El perro corre 3 veces.")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ˈola,", "kˈomo", "estˈas?", "pˈero", "kˈore", "tɾˈes"} {
		if !strings.Contains(ps, want) {
			t.Errorf("Spanish phonemes %q lack %q", ps, want)
		}
	}
	if fixture.LanguageOf(fixture.PhonemeIDs(ps)) != "es" {
		t.Errorf("%q does not sound Spanish to the fixture Whisper", ps)
	}
	en, err := e.PhonemesFor("af_heart", "Hola, ¿cómo estás?")
	if err != nil || en == ps[:len(en)] {
		t.Fatalf("an a voice reads Spanish text as English: %q %v", en, err)
	}
	var chunks []Chunk
	err = e.Speak(context.Background(), Request{Text: "Hola, ¿cómo estás?", Voice: "ef_dora"}, func(c Chunk) error {
		chunks = append(chunks, c)
		return nil
	})
	if err != nil || len(chunks) != 1 {
		t.Fatalf("speak: %v, %d chunks", err, len(chunks))
	}
	got := decodeTones(t, chunks[0].PCM, 0.8)
	want := fixture.PhonemeIDs(chunks[0].Phonemes)
	if !slices.Equal(got, toInt64(want)) || chunks[0].Phonemes != "ˈola, kˈomo estˈas?" {
		t.Fatalf("spoke %v (%q), want %v", got, chunks[0].Phonemes, want)
	}
}

func toInt64(ids []int) []int64 {
	out := make([]int64, len(ids))
	for i, id := range ids {
		out[i] = int64(id)
	}
	return out
}

// TestVoiceLanguages: each prefix's language and espeak-ng voice as Kokoro's own G2P uses them;
// Japanese and Mandarin voices are refused by name; French and British English phonemise through
// their espeak-ng voices.
func TestVoiceLanguages(t *testing.T) {
	for voice, code := range map[string]string{"af_heart": "en-us", "bf_emma": "en-gb", "ef_dora": "es", "ff_siwis": "fr",
		"hf_alpha": "hi", "if_sara": "it", "pf_dora": "pt-br", "jf_alpha": "ja", "zf_xiaobei": "zh"} {
		if l, ok := VoiceLanguage(voice); !ok || l.Code != code {
			t.Errorf("%s: %+v %v, want %s", voice, l, ok, code)
		}
	}
	e := engine(t)
	err := e.Speak(context.Background(), Request{Text: "こんにちは", Voice: "jf_alpha"}, func(Chunk) error { return nil })
	if !errors.Is(err, ErrVoiceLanguage) || !strings.Contains(err.Error(), "Japanese") {
		t.Fatalf("jf_alpha: %v", err)
	}
	if err := e.Check("jf_alpha", 1); !errors.Is(err, ErrVoiceLanguage) {
		t.Fatalf("Check jf_alpha: %v", err)
	}
	fr, err := e.languageG2P(Languages[3]).Phonemize("Bonjour, merci.")
	if err != nil || !strings.Contains(fr, "ʁ") || !strings.Contains(fr, "bɔ̃") {
		t.Fatalf("French: %q %v", fr, err)
	}
	gb, err := e.languageG2P(Languages[1]).Phonemize("go home")
	if err != nil || !strings.Contains(gb, "Q") {
		t.Fatalf("British: %q %v (misaki writes əʊ as Q)", gb, err)
	}
	// The English G2P is not disturbed by the voice switches (espeak-ng is process-global).
	us, err := e.Phonemes("zyzzyva")
	if err != nil || strings.ContainsAny(us, "Q") {
		t.Fatalf("American after others: %q %v", us, err)
	}
}
