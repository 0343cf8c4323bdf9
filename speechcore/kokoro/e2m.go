package kokoro

import (
	"regexp"
	"strings"
)

// espeakToMisaki is misaki's EspeakFallback post-processing for American English
// (docs/models.md §2.5), applied to espeak-ng IPA written with the tie '^'. The replacements
// run one after another over the whole string, longest key first, exactly as misaki's chain of
// str.replace calls does.
var espeakToMisakiPairs = [][2]string{
	{"ʔˌn\u0329", "ʔn"}, {"ʔn\u0329", "ʔn"},
	{"a^ɪ", "I"}, {"a^ʊ", "W"}, {"d^ʒ", "ʤ"}, {"e^ɪ", "A"}, {"t^ʃ", "ʧ"}, {"ɔ^ɪ", "Y"}, {"ə^l", "ᵊl"},
	{"ʲo", "jo"}, {"ʲə", "jə"},
	{"e", "A"}, {"ʲ", ""}, {"ɚ", "əɹ"}, {"r", "ɹ"}, {"x", "k"}, {"ç", "k"}, {"ɐ", "ə"}, {"ɬ", "l"},
	{"\u0303", ""},
}

var syllabicRe = regexp.MustCompile(`(\S)\x{0329}`)

func espeakToMisaki(ps string) string {
	for _, p := range espeakToMisakiPairs {
		ps = strings.ReplaceAll(ps, p[0], p[1])
	}
	ps = syllabicRe.ReplaceAllString(ps, "ᵊ$1")
	ps = strings.ReplaceAll(ps, "\u0329", "")
	// American accent.
	ps = strings.ReplaceAll(ps, "o^ʊ", "O")
	ps = strings.ReplaceAll(ps, "ɜːɹ", "ɜɹ")
	ps = strings.ReplaceAll(ps, "ɜː", "ɜɹ")
	ps = strings.ReplaceAll(ps, "ɪə", "iə")
	ps = strings.ReplaceAll(ps, "ː", "")
	ps = strings.ReplaceAll(ps, "o", "ɔ") // espeak-ng < 1.52 (Debian 12 ships 1.51)
	// misaki versions other than "2.0" (Kokoro v1.0) write the flap and glottal stop as T and t.
	ps = strings.ReplaceAll(ps, "ɾ", "T")
	ps = strings.ReplaceAll(ps, "ʔ", "t")
	return strings.ReplaceAll(ps, "^", "")
}
