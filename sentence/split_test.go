package sentence

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSplit(t *testing.T) {
	t.Parallel()
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
			if got := Split(tc.in); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Split(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestSplitter(t *testing.T) {
	t.Parallel()
	type step struct {
		push string
		want []string
	}
	tests := map[string]struct {
		opts  Options
		steps []step
		flush string
	}{
		"waits for a sentence end": {
			opts: Options{FirstAlone: true, SplitChars: 100},
			steps: []step{
				{"Hel", nil}, {"lo there", nil}, {".", nil}, // "." might be "3.5": wait for the space
				{" How", []string{"Hello there."}},
			},
			flush: "How",
		},
		"first alone then batches": {
			opts: Options{FirstAlone: true, SplitChars: 30},
			steps: []step{
				{"One. Two. Three. Four is longer than that. Five. ", []string{"One.", "Two. Three.", "Four is longer than that.", "Five."}},
			},
		},
		"no batching when split is zero": {
			opts:  Options{FirstAlone: true},
			steps: []step{{"A b. C d. E f. ", []string{"A b.", "C d.", "E f."}}},
		},
		"batch only what is complete together": {
			opts: Options{FirstAlone: true, SplitChars: 100},
			steps: []step{
				{"First. ", []string{"First."}},
				{"Second. ", []string{"Second."}},
				{"Third. Fourth. Fif", []string{"Third. Fourth."}},
			},
			flush: "Fif",
		},
		"unpunctuated text breaks on a space": {
			opts: Options{SplitChars: 20},
			steps: []step{
				{"one two three four five six seven", []string{"one two three four"}},
				{" eight nine ten eleven", []string{"five six seven eight"}},
			},
			flush: "nine ten eleven",
		},
		"a word longer than split waits for a space": {
			opts:  Options{SplitChars: 5},
			steps: []step{{"abcdefghij", nil}, {"k lm", []string{"abcdefghijk"}}},
			flush: "lm",
		},
		"a word over four splits is cut at split": {
			opts:  Options{SplitChars: 5},
			steps: []step{{strings.Repeat("a", 20), nil}, {"bc", []string{"aaaaa"}}},
			flush: strings.Repeat("a", 15) + "bc",
		},
		"a sentence over split is broken on a space": {
			opts: Options{FirstAlone: true, SplitChars: 20},
			steps: []step{{"one two three four five six seven eight. Short. ",
				[]string{"one two three four", "five six seven", "eight.", "Short."}}},
		},
		"a later sentence over split is broken, its tail batched": {
			opts: Options{FirstAlone: true, SplitChars: 20},
			steps: []step{{"Hi. one two three four five six seven. Ok. ",
				[]string{"Hi.", "one two three four", "five six seven. Ok."}}},
		},
		"abbreviation across pushes": {
			opts:  Options{FirstAlone: true},
			steps: []step{{"Ask Dr.", nil}, {" Who now. ", []string{"Ask Dr. Who now."}}},
		},
		"closing quote across pushes": {
			opts:  Options{FirstAlone: true},
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
	t.Parallel()
	s := NewSplitter(Options{FirstAlone: true, SplitChars: 300})
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
	t.Parallel()
	text := `Dr. Smith said "hello." It costs $3.50, etc. Then J. Doe left! Did he? Yes… I think so. The end`
	want := Split(text)
	for _, size := range []int{1, 2, 3, 7, 13} {
		s := NewSplitter(Options{})
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
		s := NewSplitter(Options{FirstAlone: true, SplitChars: split % 200})
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

func TestCut(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		in    string
		limit int
		want  []string
	}{
		"short":              {"  one two  ", 20, []string{"one two"}},
		"empty":              {"  ", 20, nil},
		"no limit":           {"one two three", 0, []string{"one two three"}},
		"at spaces":          {"one two three four five six seven", 10, []string{"one two", "three four", "five six", "seven"}},
		"long word waits":    {"abcdefghijk lm", 5, []string{"abcdefghijk", "lm"}},
		"word over 4 splits": {strings.Repeat("a", 23), 5, []string{"aaaaa", strings.Repeat("a", 18)}},
		"punctuation kept":   {"Hello there, this is long. And more.", 15, []string{"Hello there,", "this is long.", "And more."}},
		"runes not bytes":    {"héllo wörld çava", 11, []string{"héllo wörld", "çava"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := Cut(tc.in, tc.limit); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Cut(%q, %d) = %q, want %q", tc.in, tc.limit, got, tc.want)
			}
		})
	}
}

// The request: 240 KB of unpunctuated words is many pieces of at most limit characters,
// each ending at a word, and nothing is lost.
func TestCutBoundsUnpunctuatedText(t *testing.T) {
	t.Parallel()
	text := strings.Repeat("hello world ", 20000)
	pieces := Cut(text, 400)
	if len(pieces) < 600 {
		t.Fatalf("%d pieces, want one per ~400 characters", len(pieces))
	}
	for i, p := range pieces {
		if n := utf8.RuneCountInString(p); n > 400 {
			t.Fatalf("piece %d has %d characters, want at most 400", i, n)
		}
		if strings.HasPrefix(p, "orld") || strings.HasSuffix(p, "hel") {
			t.Fatalf("piece %d broke a word: %q", i, p)
		}
	}
	if got := strings.Join(pieces, " "); got != strings.TrimSpace(text) {
		t.Fatal("pieces lost or invented text")
	}
}

func FuzzCut(f *testing.F) {
	f.Add("one two three four five", 7)
	f.Add(strings.Repeat("a", 50)+" b", 3)
	f.Fuzz(func(t *testing.T, text string, limit int) {
		if !utf8.ValidString(text) || limit <= 0 || limit > 100 {
			return
		}
		pieces := Cut(text, limit)
		for _, p := range pieces {
			if p == "" || p != strings.TrimSpace(p) {
				t.Fatalf("piece %q is empty or untrimmed", p)
			}
			if utf8.RuneCountInString(p) > maxWordSplits*limit {
				t.Fatalf("piece of %d characters, limit %d", utf8.RuneCountInString(p), limit)
			}
		}
		if got, want := strings.Join(strings.Fields(strings.Join(pieces, " ")), ""), strings.Join(strings.Fields(text), ""); got != want {
			t.Fatalf("pieces %q lost text", pieces)
		}
	})
}
