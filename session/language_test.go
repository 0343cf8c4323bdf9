package session

import (
	"testing"

	"github.com/voiced/voiced/wire"
)

// TestMindToldTheLanguage: the mind's instructions name the transcription language when the
// session sets one and its instructions do not say it already.
func TestMindToldTheLanguage(t *testing.T) {
	for name, c := range map[string]struct {
		instructions, language, want string
	}{
		"spanish, no instructions": {"", "es", "The user speaks Spanish; answer in Spanish."},
		"french appended":          {"Be brief.", "fr-FR", "Be brief.\n\nThe user speaks French; answer in French."},
		"already said":             {"Answer in Spanish.", "es", "Answer in Spanish."},
		"english":                  {"Be brief.", "en", "Be brief."},
		"auto":                     {"Be brief.", "auto", "Be brief."},
	} {
		cfg := wire.Session{Instructions: c.instructions, Transcription: &wire.Transcription{Model: "whisper-1", Language: c.language}}
		if got := mindRequest(cfg, "", nil, nil).Instructions; got != c.want {
			t.Errorf("%s: %q, want %q", name, got, c.want)
		}
	}
	if got := mindRequest(wire.Session{Instructions: "x"}, "", nil, nil).Instructions; got != "x" {
		t.Errorf("no transcription: %q", got)
	}
}
