package kokoro

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"unicode/utf8"
)

// PadID is the id put at both ends of every call (hexgrad KModel: [0, *ids, 0]).
const PadID = 0

// Vocab maps phoneme symbols (one rune each) to Kokoro token ids, read from config.json.
type Vocab struct {
	ids  map[rune]int64
	syms map[int64]rune
}

// LoadVocab reads the "vocab" object of a Kokoro config.json.
func LoadVocab(configPath string) (*Vocab, error) {
	b, err := os.ReadFile(configPath)
	if err != nil {
		return nil, fmt.Errorf("read kokoro config: %w", err)
	}
	var cfg struct {
		Vocab map[string]int64 `json:"vocab"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return nil, fmt.Errorf("parse kokoro config %s: %w", configPath, err)
	}
	if len(cfg.Vocab) == 0 {
		return nil, fmt.Errorf("kokoro config %s has no vocab", configPath)
	}
	v := &Vocab{ids: map[rune]int64{}, syms: map[int64]rune{}}
	for sym, id := range cfg.Vocab {
		r, n := utf8.DecodeRuneInString(sym)
		if n != len(sym) || id <= PadID {
			return nil, fmt.Errorf("kokoro config %s: vocab entry %q → %d is not one symbol with an id above the pad", configPath, sym, id)
		}
		v.ids[r] = id
		v.syms[id] = r
	}
	return v, nil
}

// Encode maps each symbol of phonemes to its id; symbols not in the vocab are dropped.
func (v *Vocab) Encode(phonemes string) []int64 {
	ids := make([]int64, 0, len(phonemes))
	for _, r := range phonemes {
		if id, ok := v.ids[r]; ok {
			ids = append(ids, id)
		}
	}
	return ids
}

// Decode maps ids back to symbols; unknown ids and the pad are skipped.
func (v *Vocab) Decode(ids []int64) string {
	var b strings.Builder
	for _, id := range ids {
		if r, ok := v.syms[id]; ok {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Filter keeps only the symbols the vocab has, so one rune of the result is one id.
func (v *Vocab) Filter(phonemes string) string {
	return strings.Map(func(r rune) rune {
		if _, ok := v.ids[r]; ok {
			return r
		}
		return -1
	}, phonemes)
}

// Size is the number of symbols.
func (v *Vocab) Size() int { return len(v.ids) }
