package kokoro

import (
	"fmt"
	"regexp"
	"strings"
)

// Kokoro's languages (issue 21). A voice's language is its name's first letter, Kokoro's
// convention (hexgrad/kokoro pipeline.py LANG_CODES): a American English, b British English,
// e Spanish, f French, h Hindi, i Italian, p Brazilian Portuguese, j Japanese, z Mandarin. The
// G2P per language follows Kokoro's own: misaki (lexicon + espeak-ng en-us fallback through its
// E2M mapping) for a; espeak-ng en-gb through misaki's British fallback mapping for b (the mount
// carries no British lexicon); misaki's EspeakG2P (espeak-ng es, fr-fr, hi, it, pt-br; ties
// folded to Kokoro's letters) for e, f, h, i, p. Japanese and Mandarin need misaki's ja/zh G2P
// (pyopenjtalk, jieba + pypinyin), which has no counterpart here: their voices are refused by
// name (ErrVoiceLanguage) and listed as such.

// Language is one of Kokoro's voice languages.
type Language struct {
	Prefix byte   // the voice-name letter
	Code   string // BCP-47-ish code: en-us, en-gb, es, fr, hi, it, pt-br, ja, zh
	Name   string
	// Espeak is the espeak-ng voice that phonemises it ("" when no G2P serves it).
	Espeak string
	// Served says whether voices of this language can speak here.
	Served bool
}

// Languages lists Kokoro v1.0's voice languages in prefix order.
var Languages = []Language{
	{'a', "en-us", "American English", "en-us", true},
	{'b', "en-gb", "British English", "en-gb", true},
	{'e', "es", "Spanish", "es", true},
	{'f', "fr", "French", "fr-fr", true},
	{'h', "hi", "Hindi", "hi", true},
	{'i', "it", "Italian", "it", true},
	{'p', "pt-br", "Brazilian Portuguese", "pt-br", true},
	{'j', "ja", "Japanese", "", false},
	{'z', "zh", "Mandarin Chinese", "", false},
}

// VoiceLanguage is the language of a voice by its name's prefix; ok is false for a name that
// does not follow Kokoro's convention (spoken as American English).
func VoiceLanguage(voice string) (Language, bool) {
	if len(voice) >= 2 && voice[1] == 'f' || len(voice) >= 2 && voice[1] == 'm' {
		for _, l := range Languages {
			if l.Prefix == voice[0] {
				return l, true
			}
		}
	}
	return Languages[0], false
}

// checkLanguage refuses a voice whose language has no G2P here.
func checkLanguage(voice string) error {
	if l, _ := VoiceLanguage(voice); !l.Served {
		return fmt.Errorf("%w: %s is a %s voice; no %s G2P is served here (Kokoro's needs misaki's %s G2P, which has no Go or espeak-ng counterpart). Served: %s",
			ErrVoiceLanguage, voice, l.Name, l.Name, l.Code, servedNames())
	}
	return nil
}

func servedNames() string {
	var names []string
	for _, l := range Languages {
		if l.Served {
			names = append(names, l.Name)
		}
	}
	return strings.Join(names, ", ")
}

// espeakG2PPairs is misaki's EspeakG2P post-processing for es, fr-fr, hi, it, pt-br
// (docs/models.md §2.5): tie pairs folded to Kokoro's single letters, then ^ and - removed.
var espeakG2PPairs = [][2]string{
	{"a^ɪ", "I"}, {"a^ʊ", "W"}, {"d^z", "ʣ"}, {"d^ʒ", "ʤ"}, {"e^ɪ", "A"}, {"o^ʊ", "O"}, {"ə^ʊ", "Q"},
	{"s^s", "S"}, {"t^s", "ʦ"}, {"t^ʃ", "ʧ"}, {"ɔ^ɪ", "Y"}, {"^", ""}, {"-", ""},
}

// languageFlag is espeak-ng's language-switch mark, "(en)" around words it reads in another
// voice; phonemizer's language_switch='remove-flags' drops them.
var languageFlag = regexp.MustCompile(`\([a-z]{2,3}(-[a-z]+)?\)`)

func espeakToKokoro(ps string) string {
	ps = languageFlag.ReplaceAllString(ps, "")
	for _, p := range espeakG2PPairs {
		ps = strings.ReplaceAll(ps, p[0], p[1])
	}
	return ps
}

// espeakToMisakiBritish is misaki's EspeakFallback for British English: the shared replacements,
// then the British ones (e^ə→ɛː, iə→ɪə, ə^ʊ→Q), o→ɔ (espeak < 1.52), ɾ→T, ʔ→t, ^ removed.
func espeakToMisakiBritish(ps string) string {
	for _, p := range espeakToMisakiPairs {
		ps = strings.ReplaceAll(ps, p[0], p[1])
	}
	ps = syllabicRe.ReplaceAllString(ps, "ᵊ$1")
	ps = strings.ReplaceAll(ps, "\u0329", "")
	ps = strings.ReplaceAll(ps, "e^ə", "ɛː")
	ps = strings.ReplaceAll(ps, "iə", "ɪə")
	ps = strings.ReplaceAll(ps, "ə^ʊ", "Q")
	ps = strings.ReplaceAll(ps, "o", "ɔ")
	ps = strings.ReplaceAll(ps, "ɾ", "T")
	ps = strings.ReplaceAll(ps, "ʔ", "t")
	return strings.ReplaceAll(ps, "^", "")
}

// languageG2P phonemises one language: the English G2P (lexicon) for American English, espeak-ng
// with the language's voice and mapping for the others, word by word with Kokoro's punctuation
// kept (tokenize), results cached per word.
func (e *Engine) languageG2P(l Language) *G2P {
	if l.Prefix == 'a' {
		return e.g2p
	}
	e.g2pMu.Lock()
	defer e.g2pMu.Unlock()
	if g, ok := e.g2ps[l.Prefix]; ok {
		return g
	}
	g := NewG2P(nil)
	g.voice = l.Espeak
	g.mapping = espeakToKokoro
	if l.Prefix == 'b' {
		g.mapping = espeakToMisakiBritish
	}
	if e.g2ps == nil {
		e.g2ps = map[byte]*G2P{}
	}
	e.g2ps[l.Prefix] = g
	return g
}

// normalizeFor is the text normaliser for a language: Normalize (English numbers, money, times,
// abbreviations) for English; for the others the text is left to espeak-ng, which reads numbers
// in its voice's language.
func normalizeFor(l Language, text string) string {
	if l.Prefix == 'a' || l.Prefix == 'b' {
		return Normalize(text)
	}
	return strings.Join(strings.Fields(text), " ")
}
