package kokoro

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestNormalize(t *testing.T) {
	tests := map[string]struct{ in, want string }{
		"curly quotes":     {"\u201cHi,\u201d she said. It\u2019s fine.", `"Hi," she said. It's fine.`},
		"whitespace":       {"  a \t b\n\nc ", "a b c"},
		"titles":           {"Dr. Smith met Mr. Jones and Mrs. Brown.", "Doctor Smith met Mister Jones and Missus Brown."},
		"etc at end":       {"apples, pears, etc.", "apples, pears, et cetera."},
		"etc mid sentence": {"apples, etc. and pears", "apples, et cetera and pears"},
		"etc then capital": {"apples, etc. Then pears.", "apples, et cetera. Then pears."},
		"e.g.":             {"fruit, e.g. apples", "fruit, for example, apples"},
		"number":           {"I have 42 cats.", "I have forty-two cats."},
		"thousands":        {"1,234,567 people", "one million two hundred thirty-four thousand five hundred sixty-seven people"},
		"list commas kept": {"1, 2, 3.", "one, two, three."},
		"decimal":          {"pi is 3.14.", "pi is three point one four."},
		"negative":         {"it was -5 outside", "it was minus five outside"},
		"ordinal":          {"the 1st, 2nd, 3rd, 4th and 21st", "the first, second, third, fourth and twenty-first"},
		"ordinal twelfth":  {"the 12th and 100th", "the twelfth and one hundredth"},
		"year":             {"in 1984 and 2024", "in nineteen eighty-four and twenty twenty-four"},
		"year 2000s":       {"in 2005", "in two thousand five"},
		"year oh":          {"in 1905 and 1900", "in nineteen oh five and nineteen hundred"},
		"not a year":       {"1,500 people and 9999", "one thousand five hundred people and nine thousand nine hundred ninety-nine"},
		"time":             {"at 3:30 pm", "at three thirty P M"},
		"time oclock":      {"at 7:00", "at seven o'clock"},
		"time oh":          {"at 9:05 a.m.", "at nine oh five A M"},
		"dollars":          {"$5 and $1", "five dollars and one dollar"},
		"dollars cents":    {"$3.50", "three dollars and fifty cents"},
		"cents only":       {"$0.99", "ninety-nine cents"},
		"pounds":           {"£2.01", "two pounds and one penny"},
		"euros":            {"€20", "twenty euros"},
		"millions":         {"$1.5 million", "one point five million dollars"},
		"percent":          {"50% off", "fifty percent off"},
		"range":            {"pages 5-10", "pages five to ten"},
		"ampersand":        {"salt & pepper", "salt and pepper"},
		"number sign":      {"No. 5", "number five"},
		"dash":             {"wait -- what", "wait — what"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := Normalize(tc.in); got != tc.want {
				t.Errorf("Normalize(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
		})
	}
}

func FuzzNormalize(f *testing.F) {
	f.Add("Dr. Smith paid $1,234.56 at 3:30 pm on the 21st of 1984, 50% off, pages 5-10.")
	f.Fuzz(func(t *testing.T, text string) {
		if !utf8.ValidString(text) {
			return
		}
		out := Normalize(text)
		if !utf8.ValidString(out) {
			t.Fatalf("invalid UTF-8 from %q", text)
		}
	})
}

func TestSplitPhonemes(t *testing.T) {
	sentence := strings.Repeat("a", 99) + "." // 100 symbols
	long := strings.TrimSpace(strings.Repeat(sentence+" ", 12))
	clauses := strings.TrimSpace(strings.Repeat(strings.Repeat("b", 99)+", ", 12))
	words := strings.TrimSpace(strings.Repeat(strings.Repeat("c", 9)+" ", 120))
	tests := map[string]struct {
		in        string
		batches   int
		endsWithP bool // every batch but the last ends at a sentence mark
	}{
		"short stays whole":      {"hˈɛlO wˈɜɹld.", 1, false},
		"sentences balanced":     {long, 3, true},
		"clauses when no period": {clauses, 3, false},
		"words when no marks":    {words, 3, false},
		"one unbroken run":       {strings.Repeat("d", 1200), 3, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := SplitPhonemes(tc.in, MaxPhonemes)
			if len(got) != tc.batches {
				t.Fatalf("%d batches, want %d", len(got), tc.batches)
			}
			total := 0
			for i, b := range got {
				n := utf8.RuneCountInString(b)
				if n > MaxPhonemes || n == 0 {
					t.Fatalf("batch %d has %d symbols", i, n)
				}
				if tc.endsWithP && !strings.HasSuffix(b, ".") {
					t.Errorf("batch %d does not end at a sentence: %q", i, b[len(b)-5:])
				}
				total += len(strings.ReplaceAll(b, " ", ""))
			}
			if want := len(strings.ReplaceAll(tc.in, " ", "")); total != want {
				t.Errorf("batches hold %d symbols, input %d", total, want)
			}
		})
	}
	// Balanced: 1200 symbols in 3 batches are 400 each, not 510+510+180.
	for _, b := range SplitPhonemes(long, MaxPhonemes) {
		if n := utf8.RuneCountInString(b); n < 300 {
			t.Errorf("unbalanced batch of %d", n)
		}
	}
}

func FuzzSplitPhonemes(f *testing.F) {
	f.Add("hˈɛlO wˈɜɹld. ðə kˈæt, sˈæt!", 12)
	f.Fuzz(func(t *testing.T, ps string, max int) {
		if !utf8.ValidString(ps) || max < 1 || max > 600 {
			return
		}
		batches := SplitPhonemes(ps, max)
		var kept []string
		for _, b := range batches {
			if n := utf8.RuneCountInString(b); n == 0 || n > max {
				t.Fatalf("batch of %d symbols (max %d)", n, max)
			}
			kept = append(kept, b)
		}
		if got, want := strings.Join(strings.Fields(strings.Join(kept, " ")), ""), strings.Join(strings.Fields(ps), ""); got != want {
			t.Fatalf("symbols lost: %q vs %q", got, want)
		}
	})
}
