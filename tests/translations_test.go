package tests

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/voiced/voiced/speechcore/fixture"
)

// TestNodeOpenAITranslations (issue 21): the official openai npm package's
// audio.translations.create against the built binary. Spanish speech (audio.speech.create with
// ef_dora: the real espeak-ng es G2P through the fixture Kokoro) comes back translated — the
// fixture Whisper's <|translate|> task reads Spanish signature phonemes as English ones
// (fixture.TranslateIDs) — in json, verbose_json (task translate, language english, segments) and
// text, while a transcription of the same speech gives the Spanish phonemes; English speech is
// its own translation.
func TestNodeOpenAITranslations(t *testing.T) {
	checkLeaks(t)
	s := startServer(t, serverOpts{})
	const spanish = "ˈola, kˈomo estˈas?" // espeak-ng es for "Hola, ¿cómo estás?"
	cases := []struct{ voice, text, heard, want string }{
		{"ef_dora", "Hola, ¿cómo estás?", spanish, fixture.Phonemes(fixture.TranslateIDs(fixture.PhonemeIDs(spanish)))},
		{"af_heart", roundTripSentence, expectedPhonemes(t, roundTripSentence), expectedPhonemes(t, roundTripSentence)},
	}
	for _, c := range cases {
		t.Run(c.voice, func(t *testing.T) {
			lines := nodeScript(t, "translations.mjs", []string{"VOICED_BASE_URL=" + s.Base + "/v1", "VOICED_API_KEY=" + s.Token}, c.voice, c.text)
			var r struct {
				JSON    struct{ Text string }
				Verbose struct {
					Task, Language, Text string
					Duration             float64
					Segments             []struct{ Start, End float64 }
				}
				Text          string
				Transcription struct{ Text, Language string }
			}
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
				t.Fatalf("node output %q: %v", lines, err)
			}
			if r.Transcription.Text != c.heard {
				t.Fatalf("transcription %+v, want %q", r.Transcription, c.heard)
			}
			if r.JSON.Text != c.want || strings.TrimSpace(r.Text) != c.want {
				t.Errorf("translation json %q text %q, want %q", r.JSON.Text, r.Text, c.want)
			}
			v := r.Verbose
			if v.Task != "translate" || v.Language != "english" || v.Text != c.want || len(v.Segments) != 1 || v.Duration <= 0 {
				t.Errorf("verbose_json %+v, want task translate, english, %q, one segment", v, c.want)
			}
		})
	}
	if cases[0].want == cases[0].heard {
		t.Fatal("the fixture's translation of the Spanish clip equals its transcript: the test could not tell them apart")
	}
}
