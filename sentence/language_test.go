package sentence

import (
	"slices"
	"testing"
)

// TestSplitServedLanguages: the punctuation and abbreviations of the languages voiced speaks.
func TestSplitServedLanguages(t *testing.T) {
	tests := map[string]struct {
		text string
		want []string
	}{
		"Spanish ¿ ¡":                {"Hola. ¿Cómo estás? ¡Muy bien!", []string{"Hola.", "¿Cómo estás?", "¡Muy bien!"}},
		"Spanish, no space before ¿": {"¡Hola!¿Qué tal?", []string{"¡Hola!", "¿Qué tal?"}},
		"Spanish abbreviations":      {"La Sra. García y la Dra. Pérez llegan. Ud. también.", []string{"La Sra. García y la Dra. Pérez llegan.", "Ud. también."}},
		"French « »":                 {"Il a dit « Bonjour. » Puis il est parti.", []string{"Il a dit « Bonjour. »", "Puis il est parti."}},
		"French abbreviations":       {"Mme. Dupont et Mlle. Roux. Elles sont là.", []string{"Mme. Dupont et Mlle. Roux.", "Elles sont là."}},
		"Italian abbreviations":      {"Il Sig. Rossi e il Dott. Bianchi. Arrivano.", []string{"Il Sig. Rossi e il Dott. Bianchi.", "Arrivano."}},
		"ideographic full stop":      {"你好。我很好！你呢？", []string{"你好。", "我很好！", "你呢？"}},
		"Japanese brackets":          {"「こんにちは。」元気？", []string{"「こんにちは。」", "元気？"}},
		"etc. before ¿":              {"Manzanas, peras, etc. ¿Quieres?", []string{"Manzanas, peras, etc.", "¿Quieres?"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := Split(tc.text); !slices.Equal(got, tc.want) {
				t.Fatalf("Split(%q) = %q, want %q", tc.text, got, tc.want)
			}
		})
	}
	// Streaming: an ideographic full stop completes its sentence at once (no space follows in
	// CJK text); a Western period waits for the next character.
	sp := NewSplitter(Options{})
	if got := sp.Push("你好。"); !slices.Equal(got, []string{"你好。"}) {
		t.Fatalf("Push(你好。) = %q", got)
	}
	if got := sp.Push("Hola."); len(got) != 0 {
		t.Fatalf("Push(Hola.) = %q, want nothing yet", got)
	}
}
