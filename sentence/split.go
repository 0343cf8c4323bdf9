package sentence

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// A sentence ends at a run of terminators (. ! ? …) followed, after any closing quotes or
// brackets, by whitespace or the end of the text; a newline ends one too. A period after a known
// abbreviation (Dr., Mr., e.g.) or a single capital letter (an initial, J. Smith) ends nothing,
// and "etc." ends a sentence only when a capital or the end of the text follows it. Closing
// quotes and brackets stay with the sentence they close.
//
// The served languages' punctuation (issue 21): Spanish opens with ¿ ¡ (they begin the next
// sentence, and are skipped when looking for the capital after "etc."); French and Spanish
// quote with « » (» closes like ”); Chinese and Japanese end with 。！？, which need no
// whitespace after them (those scripts put none), and close with 」』）. Abbreviations of
// Spanish, French, Italian and Portuguese titles are in the list.

func isTerminator(r rune) bool {
	return r == '.' || r == '!' || r == '?' || r == '…' || isWideTerminator(r)
}

// isWideTerminator: the ideographic full stop and the fullwidth ! and ?.
func isWideTerminator(r rune) bool { return r == '\u3002' || r == '\uff01' || r == '\uff1f' }

func isCloser(r rune) bool {
	switch r {
	case '"', '\'', '\u201d', '\u2019', ')', ']', '}', '\u00bb', '\u300d', '\u300f', '\uff09':
		return true
	}
	return false
}

// frenchCloser is the length of spaces then » at the start of s (0 when s does not start so).
func frenchCloser(s string) int {
	k := 0
	for k < len(s) {
		r, n := utf8.DecodeRuneInString(s[k:])
		switch {
		case r == ' ' || r == '\u00a0' || r == '\u202f':
			k += n
			continue
		case r == '\u00bb' && k > 0:
			return k + n
		}
		return 0
	}
	return 0
}

// isOpener is punctuation that opens a sentence: Spanish ¿ ¡, and opening quotes and brackets.
func isOpener(r rune) bool {
	switch r {
	case '\u00bf', '\u00a1', '\u00ab', '"', '\u201c', '(', '\u300c', '\u300e':
		return true
	}
	return false
}

// abbreviations never end a sentence with their period (compared lower-case, without the period).
var abbreviations = map[string]bool{
	"mr": true, "mrs": true, "ms": true, "dr": true, "prof": true, "st": true, "jr": true, "sr": true,
	"vs": true, "mt": true, "e.g": true, "i.e": true, "a.m": true, "p.m": true, "approx": true,
	"fig": true, "inc": true, "ltd": true, "co": true, "corp": true, "gen": true, "gov": true,
	"sgt": true, "capt": true, "lt": true, "col": true, "rev": true, "hon": true,
	// Spanish, Portuguese
	"sra": true, "srta": true, "dra": true, "ud": true, "uds": true, "av": true, "avda": true,
	"pág": true, "núm": true, "p.ej": true, "exmo": true, "exma": true,
	// French
	"mme": true, "mmes": true, "mlle": true, "mlles": true, "cf": true, "env": true,
	// Italian
	"sig": true, "sigg": true, "dott": true, "geom": true, "ing": true, "avv": true,
}

// scanSentences cuts text into complete sentences and the unfinished rest. When final is true
// the end of text counts as whitespace, so a trailing terminator completes its sentence; the
// rest is then only text without one.
func scanSentences(text string, final bool) (sentences []string, rest string) {
	start := 0
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		if r == '\n' {
			if s := strings.TrimSpace(text[start:i]); s != "" {
				sentences = append(sentences, s)
			}
			i += size
			start = i
			continue
		}
		if !isTerminator(r) {
			i += size
			continue
		}
		j := i
		onlyPeriod := true
		wide := false
		for j < len(text) {
			r, n := utf8.DecodeRuneInString(text[j:])
			if !isTerminator(r) {
				break
			}
			onlyPeriod = onlyPeriod && r == '.' && j == i
			wide = wide || isWideTerminator(r)
			j += n
		}
		for j < len(text) {
			r, n := utf8.DecodeRuneInString(text[j:])
			if !isCloser(r) {
				// French sets » off with a (narrow) space: « Bonjour. »
				if k := frenchCloser(text[j:]); k > 0 {
					j += k
					continue
				}
				break
			}
			j += n
		}
		if j == len(text) && !final && !wide {
			break // the next character decides: "3." may become "3.5", "Dr." stays "Dr."
		}
		if j < len(text) && !wide {
			if r, _ := utf8.DecodeRuneInString(text[j:]); !unicode.IsSpace(r) && r != '\u00bf' && r != '\u00a1' {
				i = j
				continue
			}
		}
		if onlyPeriod && r == '.' {
			if end, decided := periodEnds(text[start:i], text[j:], final); !end {
				if !decided {
					break
				}
				i = j
				continue
			}
		}
		if s := strings.TrimSpace(text[start:j]); s != "" {
			sentences = append(sentences, s)
		}
		i, start = j, j
	}
	return sentences, strings.TrimLeftFunc(text[start:], unicode.IsSpace)
}

// periodEnds decides whether a lone period after before ends a sentence, given the text after
// it. decided is false when that needs a character that has not arrived yet.
func periodEnds(before, after string, final bool) (end, decided bool) {
	k := len(before)
	for k > 0 {
		r, n := utf8.DecodeLastRuneInString(before[:k])
		if !unicode.IsLetter(r) && r != '.' {
			break
		}
		k -= n
	}
	word := strings.ToLower(before[k:])
	if abbreviations[word] {
		return false, true
	}
	if utf8.RuneCountInString(word) == 1 {
		if r, _ := utf8.DecodeRuneInString(word); unicode.IsLetter(r) && unicode.IsUpper([]rune(before[k:])[0]) && word != "i" {
			return false, true // an initial
		}
	}
	if word == "etc" {
		next := strings.TrimLeftFunc(after, func(r rune) bool { return unicode.IsSpace(r) || isOpener(r) })
		if next == "" {
			return final, final
		}
		r, _ := utf8.DecodeRuneInString(next)
		return !unicode.IsLower(r), true
	}
	return true, true
}

// Split cuts a whole text into its sentences, trimmed. Text after the last terminator
// is the last sentence.
func Split(text string) []string {
	sentences, rest := scanSentences(text, true)
	if rest = strings.TrimSpace(rest); rest != "" {
		sentences = append(sentences, rest)
	}
	return sentences
}

// Options shape the pieces a Splitter hands out.
type Options struct {
	// FirstAlone makes the first piece the first sentence alone, so the first audio waits for one
	// sentence only.
	FirstAlone bool
	// SplitChars is the size, in characters, that later pieces batch whole sentences up to. A
	// sentence longer than it, and text that reaches it without a sentence end, is broken at a
	// space (Cut); a run of more than 4×SplitChars characters without one is cut at SplitChars.
	// 0 or less: every sentence is its own piece and unpunctuated text is never broken.
	SplitChars int
}

// Splitter cuts text that arrives a few characters at a time (a language model's reply, a
// client's stream) into speakable pieces. Push returns the pieces that are complete; Flush
// returns everything still buffered. It is not safe for concurrent use.
type Splitter struct {
	opts   Options
	buf    string
	pieces int // pieces handed out so far
}

// NewSplitter returns an empty splitter.
func NewSplitter(opts Options) *Splitter { return &Splitter{opts: opts} }

// Push adds text and returns the pieces it completed, in order (often none).
func (s *Splitter) Push(text string) []string {
	s.buf += text
	sentences, rest := scanSentences(s.buf, false)
	s.buf = rest
	pieces := s.Batch(sentences)
	if s.opts.SplitChars > 0 {
		var cut []string
		cut, s.buf = cutLong(cut, s.buf, s.opts.SplitChars)
		pieces = append(pieces, cut...)
	}
	s.pieces += len(pieces)
	return pieces
}

// Cut breaks text into pieces of about limit characters at word boundaries, as a Splitter does
// with unpunctuated text: a piece over limit characters ends at its last whitespace within
// limit, else at the first whitespace after it; a run of more than 4×limit characters without
// any is cut at limit. Pieces are trimmed; text of limit characters or fewer is one piece.
// limit ≤ 0 returns the trimmed text whole. It is what bounds the text one synthesis call is
// given, whatever a client sends.
func Cut(text string, limit int) []string {
	text = strings.TrimSpace(text)
	if text == "" {
		return nil
	}
	if limit <= 0 {
		return []string{text}
	}
	pieces, rest := cutLong(nil, text, limit)
	if rest = strings.TrimSpace(rest); rest != "" {
		pieces = append(pieces, rest)
	}
	return pieces
}

// cutLong appends to pieces what text has over limit characters, cut at word boundaries, and
// returns the rest: at most limit characters, or one word of at most 4×limit (a word that may
// still grow, for a Splitter; the last piece, for Cut).
func cutLong(pieces []string, text string, limit int) ([]string, string) {
	for runesOver(text, limit) {
		cut := spaceCut(text[:runeOffset(text, maxWordSplits*limit+1)], limit)
		if cut < 0 {
			// One word with no space to break at is held only so long: a client streaming
			// spaceless text would otherwise grow the buffer (and each Push's rescan) without bound.
			if !runesOver(text, maxWordSplits*limit) {
				break
			}
			cut = runeOffset(text, limit)
		}
		pieces = append(pieces, strings.TrimSpace(text[:cut]))
		text = strings.TrimLeftFunc(text[cut:], unicode.IsSpace)
	}
	return pieces, text
}

// Flush returns everything buffered as one piece ("" when nothing is), sentence end or not.
func (s *Splitter) Flush() string {
	rest := strings.TrimSpace(s.buf)
	s.buf = ""
	if rest != "" {
		s.pieces++
	}
	return rest
}

// Reset drops what is buffered; the next piece is again "the first" for FirstAlone.
func (s *Splitter) Reset() {
	s.buf = ""
	s.pieces = 0
}

// Buffered reports the text held back, waiting for a sentence end.
func (s *Splitter) Buffered() string { return s.buf }

// Batch hands out whole sentences as pieces, as Push would: the first alone (FirstAlone, when no
// piece was handed out yet), the rest batched up to SplitChars; a sentence over SplitChars is
// Cut at word boundaries.
func (s *Splitter) Batch(sentences []string) []string {
	if len(sentences) == 0 {
		return nil
	}
	var pieces []string
	if s.opts.SplitChars <= 0 {
		return append(pieces, sentences...)
	}
	if s.pieces == 0 && s.opts.FirstAlone {
		pieces = append(pieces, Cut(sentences[0], s.opts.SplitChars)...)
		sentences = sentences[1:]
	}
	cur, curLen := "", 0
	for _, sent := range sentences {
		n := utf8.RuneCountInString(sent)
		if cur != "" && curLen+1+n > s.opts.SplitChars {
			pieces = append(pieces, cur)
			cur, curLen = "", 0
		}
		if n > s.opts.SplitChars {
			// A sentence over SplitChars is broken at word boundaries, as unpunctuated text is.
			parts := Cut(sent, s.opts.SplitChars)
			pieces = append(pieces, parts[:len(parts)-1]...)
			sent = parts[len(parts)-1]
			n = utf8.RuneCountInString(sent)
		}
		if cur == "" {
			cur, curLen = sent, n
		} else {
			cur, curLen = cur+" "+sent, curLen+1+n
		}
	}
	if cur != "" {
		pieces = append(pieces, cur)
	}
	return pieces
}

// maxWordSplits: a run without whitespace longer than this many SplitChars is cut at SplitChars.
const maxWordSplits = 4

// runesOver reports whether text has more than n runes, reading at most n+1 of them.
func runesOver(text string, n int) bool {
	count := 0
	for range text {
		if count++; count > n {
			return true
		}
	}
	return false
}

// runeOffset returns the byte index of rune n in text (len(text) when it has no more).
func runeOffset(text string, n int) int {
	count := 0
	for i := range text {
		if count == n {
			return i
		}
		count++
	}
	return len(text)
}

// spaceCut returns the byte index of the last whitespace within the first limit characters of
// text, else of the first whitespace after them, else -1.
func spaceCut(text string, limit int) int {
	last, count := -1, 0
	for i, r := range text {
		if count > limit && last > 0 {
			return last
		}
		if unicode.IsSpace(r) && i > 0 {
			last = i
			if count >= limit {
				return last
			}
		}
		count++
	}
	if count > limit && last > 0 {
		return last
	}
	return -1
}
