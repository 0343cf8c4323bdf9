package kokoro

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// G2P turns normalised English text into misaki phonemes: each word from the lexicon when it has
// it, else from espeak-ng through misaki's mapping; punctuation Kokoro knows is kept in place,
// anything else (emoji, symbols) is dropped. It is safe for concurrent use.
type G2P struct {
	lex Lexicon
	// voice is the espeak-ng voice ("" = en-us) and mapping its IPA's post-processing (nil =
	// misaki's American E2M): languageG2P sets them for the other languages.
	voice   string
	mapping func(string) string

	mu    sync.Mutex
	cache map[string]string // espeak results by word; cleared when full
}

// espeakCacheSize bounds the remembered espeak results; espeakCacheWordBytes the words remembered
// (English words are short; a client's 1,600-character "word" is phonemised but not kept, so the
// cache holds at most ~20000 × (64 + its phonemes) bytes whatever is sent).
const (
	espeakCacheSize      = 20000
	espeakCacheWordBytes = 64
)

// NewG2P returns a G2P over lex (nil or empty: espeak-ng for every word).
func NewG2P(lex Lexicon) *G2P { return &G2P{lex: lex, cache: map[string]string{}} }

// keptPunctuation is the punctuation Kokoro's vocab has; it passes through G2P unchanged.
const keptPunctuation = ";:,.!?—…\"()“”"

type g2pToken struct {
	text  string
	punct bool
}

func tokenize(text string) []g2pToken {
	var toks []g2pToken
	start := -1
	flush := func(end int) {
		if start >= 0 {
			toks = append(toks, g2pToken{text: strings.Trim(text[start:end], "'")})
			start = -1
		}
	}
	for i, r := range text {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			if start < 0 {
				start = i
			}
		case r == '\'' && start >= 0:
			// kept inside a word (don't, it's); trimmed at its edges
		case strings.ContainsRune(keptPunctuation, r):
			flush(i)
			toks = append(toks, g2pToken{text: string(r), punct: true})
		default: // whitespace, hyphens, symbols, emoji
			flush(i)
		}
	}
	flush(len(text))
	return toks
}

// Phonemize returns the phonemes for text, words separated by one space.
func (g *G2P) Phonemize(text string) (string, error) {
	var b strings.Builder
	opened := true // at the start, or just after an opening bracket or quote: no space
	quoteOpen := false
	for _, tok := range tokenize(text) {
		if tok.text == "" {
			continue
		}
		if !tok.punct {
			ps, err := g.word(tok.text)
			if err != nil {
				return "", err
			}
			if ps == "" {
				continue
			}
			if !opened {
				b.WriteByte(' ')
			}
			b.WriteString(ps)
			opened = false
			continue
		}
		r, _ := utf8.DecodeRuneInString(tok.text)
		opener := r == '(' || r == '“' || (r == '"' && !quoteOpen)
		if r == '"' {
			quoteOpen = !quoteOpen
		}
		if opener {
			if !opened {
				b.WriteByte(' ')
			}
			b.WriteRune(r)
			opened = true
			continue
		}
		b.WriteRune(r)
		opened = false
	}
	return b.String(), nil
}

// word returns one word's phonemes.
func (g *G2P) word(w string) (string, error) {
	if ps, ok := g.lex.Lookup(w); ok {
		return ps, nil
	}
	if ps, ok := g.suffixed(w); ok {
		return ps, nil
	}
	g.mu.Lock()
	ps, ok := g.cache[w]
	g.mu.Unlock()
	if ok {
		return ps, nil
	}
	raw, err := espeakIPAIn(g.voice, w)
	if err != nil {
		return "", err
	}
	if g.mapping != nil {
		ps = g.mapping(raw)
	} else {
		ps = espeakToMisaki(raw)
	}
	if len(w) > espeakCacheWordBytes {
		return ps, nil
	}
	g.mu.Lock()
	if len(g.cache) >= espeakCacheSize {
		clear(g.cache)
	}
	g.cache[w] = ps
	g.mu.Unlock()
	return ps, nil
}

// suffixed finds a possessive or plural whose stem is in the lexicon (apples → apple + z), as
// misaki's morphology does for -s.
func (g *G2P) suffixed(w string) (string, bool) {
	if len(g.lex) == 0 || len(w) < 3 {
		return "", false
	}
	lower := strings.ToLower(w)
	var stem string
	switch {
	case strings.HasSuffix(lower, "'s"):
		stem = w[:len(w)-2]
	case strings.HasSuffix(lower, "s") && !strings.HasSuffix(lower, "ss"):
		stem = w[:len(w)-1]
	default:
		return "", false
	}
	ps, ok := g.lex.Lookup(stem)
	if !ok || ps == "" {
		return "", false
	}
	last, _ := utf8.DecodeLastRuneInString(ps)
	switch {
	case strings.ContainsRune("sz ʃʒʧʤ", last):
		return ps + "ᵻz", true
	case strings.ContainsRune("ptkfθ", last):
		return ps + "s", true
	default:
		return ps + "z", true
	}
}
