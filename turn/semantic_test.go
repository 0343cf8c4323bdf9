package turn

import (
	"errors"
	"testing"
	"time"
)

func TestClassify(t *testing.T) {
	tests := map[string]struct {
		text string
		want Ending
	}{
		"empty":                       {"", NoWords},
		"spaces":                      {"   ", NoWords},
		"punctuation only":            {" ... ", NoWords},
		"question":                    {"What time is it?", Complete},
		"statement":                   {"I'd like a coffee.", Complete},
		"exclamation":                 {"Stop!", Complete},
		"closing quote":               {`He said "go home."`, Complete},
		"trailing space":              {"Thanks.  ", Complete},
		"question ending in for":      {"What is it for?", Complete},
		"no punctuation":              {"I think the answer", Unfinished},
		"number":                      {"It costs 42", Unfinished},
		"trailing and":                {"I went to the store and", Trailing},
		"trailing and with stop":      {"I went to the store and.", Trailing},
		"trailing so":                 {"So", Trailing},
		"trailing so ellipsis":        {"It was late so...", Trailing},
		"trailing but capitalised":    {"Sure. But", Trailing},
		"trailing because":            {"I left because", Trailing},
		"filler um":                   {"I want, um", Trailing},
		"filler uh with stop":         {"The thing is, uh.", Trailing},
		"ellipsis":                    {"Well...", Trailing},
		"unicode ellipsis":            {"Well…", Trailing},
		"comma":                       {"First,", Trailing},
		"dash":                        {"The plan is -", Trailing},
		"article":                     {"Give me the", Trailing},
		"or":                          {"Tea or", Trailing},
		"so as an answer still waits": {"I think so.", Trailing},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := Classify(tc.text); got != tc.want {
				t.Fatalf("Classify(%q) = %v, want %v", tc.text, got, tc.want)
			}
		})
	}
}

func FuzzClassify(f *testing.F) {
	for _, s := range []string{"", "What?", "and", "so...", "I think\u2026", "\xff\xfe", "a. b, c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		got := Classify(text)
		if got < NoWords || got > Trailing {
			t.Fatalf("Classify(%q) = %d", text, got)
		}
		if again := Classify(text + " \n\t"); again != got {
			t.Fatalf("trailing whitespace changed %q from %v to %v", text, got, again)
		}
	})
}

func TestParseEagerness(t *testing.T) {
	tests := map[string]struct {
		in      string
		want    Eagerness
		wantErr bool
	}{
		"empty is auto": {"", EagernessAuto, false},
		"auto":          {"auto", EagernessAuto, false},
		"low":           {"low", EagernessLow, false},
		"medium":        {"medium", EagernessMedium, false},
		"high":          {"high", EagernessHigh, false},
		"unknown":       {"eager", 0, true},
		"case matters":  {"High", 0, true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ParseEagerness(tc.in)
			if tc.wantErr {
				if !errors.Is(err, ErrConfig) {
					t.Fatalf("ParseEagerness(%q): %v, want ErrConfig", tc.in, err)
				}
				return
			}
			if err != nil || got != tc.want || got.String() != map[string]string{"": "auto"}[tc.in]+tc.in {
				t.Fatalf("ParseEagerness(%q) = %v, %v", tc.in, got, err)
			}
		})
	}
}

// The documented numbers: medium (and auto) waits, low doubles, high halves; the trailing wait is
// semantic_vad's maximum (8 s / 4 s / 2 s).
func TestWaitNumbers(t *testing.T) {
	ms := time.Millisecond
	want := map[Eagerness]map[Ending]time.Duration{
		EagernessLow:    {Complete: 400 * ms, Unfinished: 4 * time.Second, NoWords: 1600 * ms, Trailing: 8 * time.Second},
		EagernessMedium: {Complete: 200 * ms, Unfinished: 2 * time.Second, NoWords: 800 * ms, Trailing: 4 * time.Second},
		EagernessAuto:   {Complete: 200 * ms, Unfinished: 2 * time.Second, NoWords: 800 * ms, Trailing: 4 * time.Second},
		EagernessHigh:   {Complete: 100 * ms, Unfinished: 1 * time.Second, NoWords: 400 * ms, Trailing: 2 * time.Second},
	}
	for e, byEnding := range want {
		for ending, w := range byEnding {
			if got := Wait(e, ending); got != w {
				t.Errorf("Wait(%v, %v) = %v, want %v", e, ending, got, w)
			}
		}
	}
}

func newSemantic(t *testing.T, e Eagerness, transcript Transcript) *Semantic {
	t.Helper()
	cfg := DefaultSemanticConfig(needModel(t), transcript)
	cfg.Eagerness = e
	s, err := NewSemantic(cfg)
	if err != nil {
		t.Fatalf("NewSemantic: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// windowsFor is the silence a wait takes in 32 ms windows, in ms.
func windowsFor(d time.Duration) int64 {
	const window = 32 * time.Millisecond
	return int64((d + window - 1) / window * window / time.Millisecond)
}

// The same real utterance and silence, with what the transcriber made of it: the silence that
// ends the turn follows the words and the eagerness.
func TestSemanticWaits(t *testing.T) {
	needModel(t)
	pcm := concat(quiet(1, 1), trimSpeech(pocketsphinx(t, "goforward.raw")), quiet(10, 2))
	hush := newHush(t, nil)
	hushEvents := feedAll(t, hush, pcm, push250ms)
	if kinds(hushEvents) != "SE" {
		t.Fatalf("hush: %v", hushEvents)
	}
	hushEnd := ms(hushEvents[1].(SpeechStopped).End)
	tests := map[string]struct {
		eagerness Eagerness
		text      string
	}{
		"medium complete":   {EagernessMedium, "Go forward ten meters."},
		"auto complete":     {EagernessAuto, "Go forward ten meters."},
		"high complete":     {EagernessHigh, "Go forward ten meters."},
		"low complete":      {EagernessLow, "Go forward ten meters."},
		"medium unfinished": {EagernessMedium, "Go forward ten meters"},
		"medium no words":   {EagernessMedium, ""},
		"medium trailing":   {EagernessMedium, "Go forward ten meters and"},
		"high trailing":     {EagernessHigh, "Go forward ten meters, um"},
		"low trailing":      {EagernessLow, "Go forward ten meters so..."},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := newSemantic(t, tc.eagerness, TranscriptFunc(func() string { return tc.text }))
			events := floorOnly(feedAll(t, s, pcm, push250ms))
			if kinds(events) != "SE" {
				t.Fatalf("events %v", events)
			}
			if events[0] != hushEvents[0] {
				t.Errorf("start %v, hush found %v on the same audio", events[0], hushEvents[0])
			}
			stop := events[1].(SpeechStopped)
			wait := Wait(tc.eagerness, Classify(tc.text))
			if got := ms(stop.End) - ms(stop.SpeechEnd); got != windowsFor(wait) {
				t.Fatalf("waited %d ms of silence, want %v (%v at %v)", got, wait, Classify(tc.text), tc.eagerness)
			}
			if s.LastEnding() != Classify(tc.text) {
				t.Errorf("LastEnding %v", s.LastEnding())
			}
			if Classify(tc.text) == Complete && tc.eagerness != EagernessLow && ms(stop.End) >= hushEnd {
				t.Errorf("a complete sentence ended at %d ms, no sooner than hush's %d ms", ms(stop.End), hushEnd)
			}
			t.Logf("%v, hush ends at %d ms", events, hushEnd)
		})
	}
}

// A speaker who pauses after "and" keeps the floor under Semantic and loses it under Hush.
func TestSemanticWaitsThroughTrailingAnd(t *testing.T) {
	needModel(t)
	first := trimSpeech(pocketsphinx(t, "goforward.raw"))
	second := trimSpeech(pocketsphinx(t, "numbers.raw"))
	pause := 1.5
	pcm := concat(quiet(1, 1), first, quiet(pause, 2), second, quiet(3, 3))
	secondAt := rate + len(first) + int(pause*rate)
	position := 0
	transcript := TranscriptFunc(func() string {
		if position < secondAt {
			return "Go forward ten meters and"
		}
		return "Go forward ten meters and then nine eight seven."
	})
	s := newSemantic(t, EagernessAuto, transcript)
	var events []Event
	for ; position < len(pcm); position += push250ms {
		ev, err := s.Feed(pcm[position:min(position+push250ms, len(pcm))], int64(position))
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, floorOnly(ev)...)
	}
	if kinds(events) != "SE" {
		t.Fatalf("semantic: %v, want one turn through the pause after \"and\"", events)
	}
	if stop := events[1].(SpeechStopped); ms(stop.SpeechEnd) < msOf(secondAt) {
		t.Fatalf("turn ended at %v, before the second phrase at %d ms", stop, msOf(secondAt))
	}
	hush := newHush(t, nil)
	if got := kinds(feedAll(t, hush, pcm, push250ms)); got != "SESE" {
		t.Fatalf("hush: %s, want two turns split at the pause", got)
	}
}

// The transcriber runs behind: when a finished sentence arrives during the silence, the turn ends
// at the next window, not a full wait later.
func TestSemanticTranscriptArrivesLate(t *testing.T) {
	needModel(t)
	clip := trimSpeech(pocketsphinx(t, "goforward.raw"))
	pcm := concat(quiet(1, 1), clip, quiet(5, 2))
	arrives := rate + len(clip) + 2*rate // two seconds into the silence
	position := 0
	s := newSemantic(t, EagernessAuto, TranscriptFunc(func() string {
		if position < arrives {
			return "go forward and"
		}
		return "Go forward ten meters."
	}))
	var events []Event
	for ; position < len(pcm); position += push250ms {
		ev, err := s.Feed(pcm[position:min(position+push250ms, len(pcm))], int64(position))
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, floorOnly(ev)...)
	}
	if kinds(events) != "SE" {
		t.Fatalf("events %v", events)
	}
	end := ms(events[1].(SpeechStopped).End)
	// the text is read per push here, so the turn ends within the push after it arrived
	if from, to := msOf(arrives), msOf(arrives+push250ms)+32; end < from || end > to {
		t.Fatalf("turn ended at %d ms, want within [%d, %d] (the sentence arrived at %d ms)", end, from, to, from)
	}
}

func TestSemanticConfig(t *testing.T) {
	cfg := DefaultSemanticConfig(nil, nil)
	if _, err := NewSemantic(cfg); !errors.Is(err, ErrConfig) {
		t.Fatalf("no model: %v", err)
	}
	cfg = DefaultSemanticConfig(needModel(t), nil)
	cfg.Eagerness = Eagerness(7)
	if _, err := NewSemantic(cfg); !errors.Is(err, ErrConfig) {
		t.Fatalf("eagerness 7: %v", err)
	}
	cfg.Eagerness = EagernessHigh
	s, err := NewSemantic(cfg) // nil transcript reads as no words
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	events := feedAll(t, s, concat(quiet(1, 1), trimSpeech(pocketsphinx(t, "goforward.raw")), quiet(2, 2)), push250ms)
	if kinds(events) != "SE" || s.LastEnding() != NoWords {
		t.Fatalf("events %v, ending %v", events, s.LastEnding())
	}
}
