package kokoro

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxPhonemes is the most phoneme ids one call takes: the context is 512 positions, two of
// them the pads (docs/models.md §2.2).
const MaxPhonemes = 510

// SplitPhonemes cuts a vocab-filtered phoneme string into balanced batches of at most max
// symbols, at the least disruptive boundary it can: whitespace after . ! ? …, then after , ; :,
// then any whitespace, and only as a last resort mid-word. Punctuation stays with the text
// before it. The batches are the fewest possible, then evened out (the smallest limit that keeps
// that count), because a short batch is spoken at another rate and loudness than its
// neighbours. This is kokoro-onnx's chunker (src/kokoro_onnx/chunker.py @d10d4d18), in runes.
func SplitPhonemes(phonemes string, max int) []string {
	atoms := phonemeAtoms(strings.TrimSpace(phonemes), max, 0)
	if len(atoms) == 0 {
		return nil
	}
	lengths := make([]int, len(atoms))
	low := 0
	for i, a := range atoms {
		lengths[i] = utf8.RuneCountInString(a)
		low = maxInt(low, lengths[i])
	}
	fewest := len(packAtoms(lengths, max))
	high := max
	for low < high {
		mid := (low + high) / 2
		if len(packAtoms(lengths, mid)) <= fewest {
			high = mid
		} else {
			low = mid + 1
		}
	}
	var out []string
	for _, r := range packAtoms(lengths, low) {
		out = append(out, strings.Join(atoms[r[0]:r[1]], " "))
	}
	return out
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// boundaryLevels: 0 whitespace after a sentence mark, 1 after a clause mark, 2 any whitespace.
var boundaryMarks = []string{".!?…", ",;:", ""}

func phonemeAtoms(ps string, max, level int) []string {
	if utf8.RuneCountInString(ps) <= max {
		if ps == "" {
			return nil
		}
		return []string{ps}
	}
	for l := level; l < len(boundaryMarks); l++ {
		pieces := splitAfterMarks(ps, boundaryMarks[l], l == len(boundaryMarks)-1)
		if len(pieces) > 1 {
			var atoms []string
			for _, p := range pieces {
				atoms = append(atoms, phonemeAtoms(strings.TrimSpace(p), max, l+1)...)
			}
			return atoms
		}
	}
	runes := []rune(ps)
	var atoms []string
	for start := 0; start < len(runes); start += max {
		atoms = append(atoms, string(runes[start:min(start+max, len(runes))]))
	}
	return atoms
}

// splitAfterMarks splits ps at runs of whitespace preceded by one of marks (any whitespace when
// any is true), dropping the whitespace.
func splitAfterMarks(ps, marks string, any bool) []string {
	var pieces []string
	start := 0
	var prev rune
	for i := 0; i < len(ps); {
		r, n := utf8.DecodeRuneInString(ps[i:])
		if unicode.IsSpace(r) && (any || strings.ContainsRune(marks, prev)) {
			j := i
			for j < len(ps) {
				r2, n2 := utf8.DecodeRuneInString(ps[j:])
				if !unicode.IsSpace(r2) {
					break
				}
				j += n2
			}
			pieces = append(pieces, ps[start:i])
			start, i, prev = j, j, ' '
			continue
		}
		prev = r
		i += n
	}
	return append(pieces, ps[start:])
}

// packAtoms groups consecutive atoms (joined by one space) into batches within limit, as index
// ranges.
func packAtoms(lengths []int, limit int) [][2]int {
	var batches [][2]int
	start, size := 0, 0
	for i, n := range lengths {
		candidate := n
		if i > start {
			candidate = size + 1 + n
		}
		if candidate > limit && i > start {
			batches = append(batches, [2]int{start, i})
			start, size = i, n
		} else {
			size = candidate
		}
	}
	if len(lengths) > 0 {
		batches = append(batches, [2]int{start, len(lengths)})
	}
	return batches
}
