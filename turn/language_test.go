package turn

import "testing"

// TestClassifyServedLanguages: the completeness hints of the other languages voiced hears.
func TestClassifyServedLanguages(t *testing.T) {
	for text, want := range map[string]Ending{
		"¿Cómo estás?":               Complete,
		"Quiero un café y":           Trailing,
		"Fui a la tienda porque":     Trailing,
		"Dame la":                    Trailing,
		"Je voudrais un café et":     Trailing,
		"C'est bien.":                Complete,
		"Vorrei un caffè e":          Trailing,
		"Eu quero um café mas":       Trailing,
		"你好。":                        Complete,
		"元気？":                        Complete,
		"Je pense que":               Unfinished,
		"Quiero un café, por favor.": Complete,
	} {
		if got := Classify(text); got != want {
			t.Errorf("Classify(%q) = %v, want %v", text, got, want)
		}
	}
}
