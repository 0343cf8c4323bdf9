package kokoro

import (
	"reflect"
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

func TestSplitSentences(t *testing.T) {
	tests := map[string]struct {
		in   string
		want []string
	}{
		"simple":         {"Hello there. How are you? Fine!", []string{"Hello there.", "How are you?", "Fine!"}},
		"abbreviations":  {"Dr. Smith arrived. Mr. Jones left.", []string{"Dr. Smith arrived.", "Mr. Jones left."}},
		"initials":       {"J. R. R. Tolkien wrote it. Then he slept.", []string{"J. R. R. Tolkien wrote it.", "Then he slept."}},
		"closing quote":  {`He said "stop." Then he left.`, []string{`He said "stop."`, "Then he left."}},
		"closing paren":  {"It works (mostly.) Good.", []string{"It works (mostly.)", "Good."}},
		"curly close":    {"She said \u201cno!\u201d It ended.", []string{"She said \u201cno!\u201d", "It ended."}},
		"decimals":       {"It costs 3.50 today. Yes.", []string{"It costs 3.50 today.", "Yes."}},
		"ellipsis":       {"Wait... what? Oh…  no.", []string{"Wait...", "what?", "Oh…", "no."}},
		"newline":        {"first line\nsecond line", []string{"first line", "second line"}},
		"no terminator":  {"just words", []string{"just words"}},
		"etc mid":        {"apples, pears, etc. and more. Done.", []string{"apples, pears, etc. and more.", "Done."}},
		"etc end":        {"apples, pears, etc. Then more.", []string{"apples, pears, etc.", "Then more."}},
		"interrobang":    {"Really?! Yes.", []string{"Really?!", "Yes."}},
		"empty":          {"   ", nil},
		"trailing space": {"One. ", []string{"One."}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := SplitSentences(tc.in); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("SplitSentences(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestSplitter(t *testing.T) {
	type step struct {
		push string
		want []string
	}
	tests := map[string]struct {
		opts  SplitterOptions
		steps []step
		flush string
	}{
		"waits for a sentence end": {
			opts: SplitterOptions{FirstAlone: true, SplitChars: 100},
			steps: []step{
				{"Hel", nil}, {"lo there", nil}, {".", nil}, // "." might be "3.5": wait for the space
				{" How", []string{"Hello there."}},
			},
			flush: "How",
		},
		"first alone then batches": {
			opts: SplitterOptions{FirstAlone: true, SplitChars: 30},
			steps: []step{
				{"One. Two. Three. Four is longer than that. Five. ", []string{"One.", "Two. Three.", "Four is longer than that.", "Five."}},
			},
		},
		"no batching when split is zero": {
			opts:  SplitterOptions{FirstAlone: true},
			steps: []step{{"A b. C d. E f. ", []string{"A b.", "C d.", "E f."}}},
		},
		"batch only what is complete together": {
			opts: SplitterOptions{FirstAlone: true, SplitChars: 100},
			steps: []step{
				{"First. ", []string{"First."}},
				{"Second. ", []string{"Second."}},
				{"Third. Fourth. Fif", []string{"Third. Fourth."}},
			},
			flush: "Fif",
		},
		"unpunctuated text breaks on a space": {
			opts: SplitterOptions{SplitChars: 20},
			steps: []step{
				{"one two three four five six seven", []string{"one two three four"}},
				{" eight nine ten eleven", []string{"five six seven eight"}},
			},
			flush: "nine ten eleven",
		},
		"a word longer than split waits for a space": {
			opts:  SplitterOptions{SplitChars: 5},
			steps: []step{{"abcdefghij", nil}, {"k lm", []string{"abcdefghijk"}}},
			flush: "lm",
		},
		"a word over four splits is cut at split": {
			opts:  SplitterOptions{SplitChars: 5},
			steps: []step{{strings.Repeat("a", 20), nil}, {"bc", []string{"aaaaa"}}},
			flush: strings.Repeat("a", 15) + "bc",
		},
		"abbreviation across pushes": {
			opts:  SplitterOptions{FirstAlone: true},
			steps: []step{{"Ask Dr.", nil}, {" Who now. ", []string{"Ask Dr. Who now."}}},
		},
		"closing quote across pushes": {
			opts:  SplitterOptions{FirstAlone: true},
			steps: []step{{`He said "go.`, nil}, {`" Then`, []string{`He said "go."`}}},
			flush: "Then",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := NewSplitter(tc.opts)
			for i, st := range tc.steps {
				if got := s.Push(st.push); !reflect.DeepEqual(got, st.want) {
					t.Fatalf("step %d Push(%q) = %q, want %q", i, st.push, got, st.want)
				}
			}
			if got := s.Flush(); got != tc.flush {
				t.Fatalf("Flush() = %q, want %q", got, tc.flush)
			}
			if got := s.Flush(); got != "" {
				t.Fatalf("second Flush() = %q, want empty", got)
			}
		})
	}
}

// A client streaming text with no whitespace (the speak door) must not grow the buffer without
// bound: each Push rescans what is buffered.
func TestSplitterBoundsSpacelessText(t *testing.T) {
	s := NewSplitter(SplitterOptions{FirstAlone: true, SplitChars: 300})
	var got []string
	for range 100 {
		got = append(got, s.Push(strings.Repeat("a", 1000))...)
		if n := utf8.RuneCountInString(s.Buffered()); n > 4*300 {
			t.Fatalf("buffered %d characters of one spaceless word, want at most %d", n, 4*300)
		}
	}
	got = append(got, s.Flush())
	if joined := strings.Join(got, ""); joined != strings.Repeat("a", 100*1000) {
		t.Fatalf("pieces lost or invented text: %d characters, want %d", len(joined), 100*1000)
	}
	for i, p := range got[:len(got)-1] {
		if utf8.RuneCountInString(p) != 300 {
			t.Fatalf("piece %d has %d characters, want 300", i, utf8.RuneCountInString(p))
		}
	}
}

// Streaming a text a few characters at a time gives the same sentences as splitting it whole.
func TestSplitterMatchesBatch(t *testing.T) {
	text := `Dr. Smith said "hello." It costs $3.50, etc. Then J. Doe left! Did he? Yes… I think so. The end`
	want := SplitSentences(text)
	for _, size := range []int{1, 2, 3, 7, 13} {
		s := NewSplitter(SplitterOptions{})
		var got []string
		for i := 0; i < len(text); i += size {
			got = append(got, s.Push(text[i:min(i+size, len(text))])...)
		}
		if rest := s.Flush(); rest != "" {
			got = append(got, rest)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("chunks of %d: got %q, want %q", size, got, want)
		}
	}
}

func FuzzSplitter(f *testing.F) {
	f.Add("Hello there. How are you? Dr. Who said \"hi.\" etc.", 3, 20)
	f.Add("no punctuation at all in this one", 1, 5)
	f.Fuzz(func(t *testing.T, text string, size, split int) {
		if size <= 0 || size > 64 || !utf8.ValidString(text) {
			return
		}
		s := NewSplitter(SplitterOptions{FirstAlone: true, SplitChars: split % 200})
		var all []string
		for i := 0; i < len(text); {
			j := min(i+size, len(text))
			for j < len(text) && !utf8.RuneStart(text[j]) {
				j++
			}
			all = append(all, s.Push(text[i:j])...)
			i = j
		}
		all = append(all, s.Flush())
		// Nothing but whitespace is lost or invented.
		if got, want := strings.Join(strings.Fields(strings.Join(all, " ")), ""), strings.Join(strings.Fields(text), ""); got != want {
			t.Fatalf("pieces %q lost text: %q vs %q", all, got, want)
		}
	})
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
