package kokoro

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// LexiconFiles are read from the model directory's lexicon/ folder, in this order; a word found
// in an earlier file wins. Both are optional (SPEC §4): without them every word goes to espeak-ng.
var LexiconFiles = []string{"us_gold.json", "us_silver.json"}

// Lexicon maps words to misaki phonemes.
type Lexicon map[string]string

// LoadLexicon reads every file of LexiconFiles present in dir into one lexicon. A missing file is
// skipped; a malformed one is an error. Entries are either a phoneme string or a dict keyed by
// part of speech, of which DEFAULT is used (voiced does no tagging).
func LoadLexicon(dir string) (Lexicon, error) {
	lex := Lexicon{}
	for _, name := range LexiconFiles {
		path := filepath.Join(dir, name)
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read lexicon: %w", err)
		}
		if err := lex.add(b); err != nil {
			return nil, fmt.Errorf("lexicon %s: %w", name, err)
		}
	}
	return lex, nil
}

func (lex Lexicon) add(b []byte) error {
	var raw map[string]lexEntry
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	for word, e := range raw {
		if _, seen := lex[word]; seen || e == "" {
			continue
		}
		lex[word] = string(e)
	}
	return nil
}

// lexEntry is one lexicon value: a phoneme string, a POS-keyed dict (DEFAULT is kept) or null
// (kept as "", then skipped).
type lexEntry string

func (e *lexEntry) UnmarshalJSON(b []byte) error {
	switch {
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*e = lexEntry(s)
	case len(b) > 0 && b[0] == '{':
		var byPOS struct {
			Default *string `json:"DEFAULT"`
		}
		if err := json.Unmarshal(b, &byPOS); err != nil {
			return err
		}
		if byPOS.Default != nil {
			*e = lexEntry(*byPOS.Default)
		}
	case string(b) == "null":
	default:
		return fmt.Errorf("lexicon entry %s is neither a string, a dict nor null", b)
	}
	return nil
}

// Lookup finds word as written, then lower-case, then capitalised.
func (lex Lexicon) Lookup(word string) (string, bool) {
	if ps, ok := lex[word]; ok {
		return ps, true
	}
	lower := strings.ToLower(word)
	if ps, ok := lex[lower]; ok {
		return ps, true
	}
	if lower != "" {
		title := strings.ToUpper(lower[:1]) + lower[1:]
		if ps, ok := lex[title]; ok {
			return ps, true
		}
	}
	return "", false
}
