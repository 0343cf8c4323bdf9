package whisper

import (
	"fmt"
	"strings"
)

// Whisper's languages in token order (openai/whisper tokenizer.py LANGUAGES; large-v3 adds yue).
// A model serves those whose <|code|> token its tokenizer.json has.
var whisperLanguages = [][2]string{
	{"en", "english"}, {"zh", "chinese"}, {"de", "german"}, {"es", "spanish"}, {"ru", "russian"},
	{"ko", "korean"}, {"fr", "french"}, {"ja", "japanese"}, {"pt", "portuguese"}, {"tr", "turkish"},
	{"pl", "polish"}, {"ca", "catalan"}, {"nl", "dutch"}, {"ar", "arabic"}, {"sv", "swedish"},
	{"it", "italian"}, {"id", "indonesian"}, {"hi", "hindi"}, {"fi", "finnish"}, {"vi", "vietnamese"},
	{"he", "hebrew"}, {"uk", "ukrainian"}, {"el", "greek"}, {"ms", "malay"}, {"cs", "czech"},
	{"ro", "romanian"}, {"da", "danish"}, {"hu", "hungarian"}, {"ta", "tamil"}, {"no", "norwegian"},
	{"th", "thai"}, {"ur", "urdu"}, {"hr", "croatian"}, {"bg", "bulgarian"}, {"lt", "lithuanian"},
	{"la", "latin"}, {"mi", "maori"}, {"ml", "malayalam"}, {"cy", "welsh"}, {"sk", "slovak"},
	{"te", "telugu"}, {"fa", "persian"}, {"lv", "latvian"}, {"bn", "bengali"}, {"sr", "serbian"},
	{"az", "azerbaijani"}, {"sl", "slovenian"}, {"kn", "kannada"}, {"et", "estonian"}, {"mk", "macedonian"},
	{"br", "breton"}, {"eu", "basque"}, {"is", "icelandic"}, {"hy", "armenian"}, {"ne", "nepali"},
	{"mn", "mongolian"}, {"bs", "bosnian"}, {"kk", "kazakh"}, {"sq", "albanian"}, {"sw", "swahili"},
	{"gl", "galician"}, {"mr", "marathi"}, {"pa", "punjabi"}, {"si", "sinhala"}, {"km", "khmer"},
	{"sn", "shona"}, {"yo", "yoruba"}, {"so", "somali"}, {"af", "afrikaans"}, {"oc", "occitan"},
	{"ka", "georgian"}, {"be", "belarusian"}, {"tg", "tajik"}, {"sd", "sindhi"}, {"gu", "gujarati"},
	{"am", "amharic"}, {"yi", "yiddish"}, {"lo", "lao"}, {"uz", "uzbek"}, {"fo", "faroese"},
	{"ht", "haitian creole"}, {"ps", "pashto"}, {"tk", "turkmen"}, {"nn", "nynorsk"}, {"mt", "maltese"},
	{"sa", "sanskrit"}, {"lb", "luxembourgish"}, {"my", "myanmar"}, {"bo", "tibetan"}, {"tl", "tagalog"},
	{"mg", "malagasy"}, {"as", "assamese"}, {"tt", "tatar"}, {"haw", "hawaiian"}, {"ln", "lingala"},
	{"ha", "hausa"}, {"ba", "bashkir"}, {"jw", "javanese"}, {"su", "sundanese"}, {"yue", "cantonese"},
}

// LanguageAuto asks the engine to detect the language from the decoder's language-token scores
// (one extra decoder pass, on finals only).
const LanguageAuto = "auto"

// DefaultLanguage is Options.Language's default: today's cost, no detection pass.
const DefaultLanguage = "en"

// LanguageName is the English name Whisper (and OpenAI's verbose_json) gives a code: "spanish"
// for "es"; the code itself when unknown.
func LanguageName(code string) string {
	for _, l := range whisperLanguages {
		if l[0] == code {
			return l[1]
		}
	}
	return code
}

// ParseLanguage reads a client's language: an ISO-639-1 code as OpenAI's API takes ("es"), a
// region-tagged one ("es-MX", "pt_BR": the region is dropped), Whisper's English name
// ("spanish"), or "auto". "" is returned as "" (the caller's default). It does not say whether a
// model serves it: Engine.CheckLanguage does.
func ParseLanguage(s string) (string, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" || s == LanguageAuto {
		return s, nil
	}
	if i := strings.IndexAny(s, "-_"); i > 0 {
		s = s[:i]
	}
	for _, l := range whisperLanguages {
		if s == l[0] || s == l[1] {
			return l[0], nil
		}
	}
	return "", fmt.Errorf("%w: %q is not one of Whisper's languages (ISO-639-1 codes such as en, es, fr, or auto)", ErrUnknownLanguage, clipString(s))
}

func clipString(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// languageTokens reads the language tokens tokenizer.json has, in Whisper's order.
func languageTokens(tok *Tokenizer) (codes []string, ids map[string]int) {
	ids = map[string]int{}
	for _, l := range whisperLanguages {
		if id, ok := tok.ID("<|" + l[0] + "|>"); ok {
			codes = append(codes, l[0])
			ids[l[0]] = id
		}
	}
	return codes, ids
}

// Languages lists the language codes the model can be told, in Whisper's order: ["en"] for an
// English-only checkpoint.
func (e *Engine) Languages() []string {
	if e.model.dec.englishOnly {
		return []string{"en"}
	}
	return append([]string(nil), e.model.dec.languages...)
}

// DefaultLanguage is the language a request without one is decoded in (Options.Language).
func (e *Engine) DefaultLanguage() string { return e.language }

// CanDetect says whether LanguageAuto detects (a multilingual checkpoint); an English-only one
// answers "en" without a pass.
func (e *Engine) CanDetect() bool { return !e.model.dec.englishOnly && len(e.model.dec.languages) > 1 }

// CheckLanguage normalises a request's language (ParseLanguage) and refuses, with
// ErrLanguageNotServed naming the served ones, a language this model has no token for: any but
// English on an English-only checkpoint. "" gives the engine's default; "auto" stays "auto".
func (e *Engine) CheckLanguage(s string) (string, error) {
	code, err := ParseLanguage(s)
	if err != nil {
		return "", err
	}
	switch code {
	case "":
		return e.language, nil
	case LanguageAuto:
		return code, nil
	}
	return code, e.model.dec.serves(code, e.modelID)
}

func (d decoding) serves(code, modelID string) error {
	if d.englishOnly {
		if code == "en" {
			return nil
		}
		return fmt.Errorf("%w: %s is an English-only checkpoint (no language tokens); it cannot hear %s (%s)", ErrLanguageNotServed, modelID, LanguageName(code), code)
	}
	if _, ok := d.langID[code]; ok {
		return nil
	}
	return fmt.Errorf("%w: %s has no <|%s|> token; it hears %s", ErrLanguageNotServed, modelID, code, strings.Join(d.languages, ", "))
}
