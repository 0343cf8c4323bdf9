package turn

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// floorOnly keeps the events that change the floor (SpeechStarted, SpeechStopped).
func floorOnly(events []Event) []Event {
	var out []Event
	for _, e := range events {
		switch e.(type) {
		case SpeechStarted, SpeechStopped:
			out = append(out, e)
		}
	}
	return out
}

// levelProber is a Prober without a model: a 512-sample window is speech (1) when its first
// sample is non-zero, else silence (0).
type levelProber struct{ buf []float32 }

func (p *levelProber) Feed(pcm []float32, emit func(float32)) error {
	p.buf = append(p.buf, pcm...)
	for len(p.buf) >= p.Window() {
		prob := float32(0)
		if p.buf[0] != 0 {
			prob = 1
		}
		emit(prob)
		p.buf = p.buf[p.Window():]
	}
	return nil
}
func (p *levelProber) Window() int  { return 512 }
func (p *levelProber) Pending() int { return len(p.buf) }
func (p *levelProber) Reset()       { p.buf = nil }
func (p *levelProber) Close() error { return nil }

var levelSpeech = SpeechFunc(func() (Prober, error) { return &levelProber{}, nil })

// windows is n 512-sample windows of speech or silence.
func windows(n int, speech bool) []float32 {
	x := make([]float32, 512*n)
	if speech {
		for i := range x {
			x[i] = 0.5
		}
	}
	return x
}

// In a pause Semantic says what it expects of the turn, before it ends it: EndLikely on the first
// quiet window whose transcript reads finished (again when a newer finished text differs),
// EndUnlikely when speech resumes after it or the text stops reading finished; Hush never hints.
func TestSemanticHints(t *testing.T) {
	type step struct {
		pcm  []float32
		text string // the partial transcript while this audio is fed
	}
	tests := map[string]struct {
		steps []step
		want  string
	}{
		"finished then stop": {[]step{{windows(10, true), "Hi there."}, {windows(12, false), "Hi there."}},
			"S L(Hi there.) E"},
		"resumed": {[]step{{windows(10, true), "Hi there."}, {windows(3, false), "Hi there."},
			{windows(6, true), "Hi there. And"}, {windows(12, false), "Hi there. And then?"}},
			"S L(Hi there.) U(resumed) L(Hi there. And then?) E"},
		"newer text": {[]step{{windows(10, true), "Book it."}, {windows(2, false), "Book it."},
			{windows(12, false), "Book it for two."}},
			"S L(Book it.) L(Book it for two.) E"},
		"no longer finished": {[]step{{windows(10, true), "Book it."}, {windows(2, false), "Book it."},
			{windows(4, false), "Book it tomorrow"}, {windows(70, false), "Book it tomorrow"}},
			"S L(Book it.) U E"},
		"unfinished never hints": {[]step{{windows(10, true), "I think the"}, {windows(200, false), "I think the"}},
			"S E"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			text := ""
			s, err := NewSemantic(DefaultSemanticConfig(levelSpeech, TranscriptFunc(func() string { return text })))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var got []string
			var at int64
			for _, st := range tc.steps {
				text = st.text
				evs, err := s.Feed(st.pcm, at)
				if err != nil {
					t.Fatal(err)
				}
				at += int64(len(st.pcm))
				for _, e := range evs {
					switch e := e.(type) {
					case SpeechStarted:
						got = append(got, "S")
					case SpeechStopped:
						got = append(got, "E")
					case EndLikely:
						got = append(got, "L("+e.Transcript+")")
					case EndUnlikely:
						if e.Resumed {
							got = append(got, "U(resumed)")
						} else {
							got = append(got, "U")
						}
					}
				}
			}
			if g := strings.Join(got, " "); g != tc.want {
				t.Fatalf("events %q, want %q", g, tc.want)
			}
		})
	}
}

// EndLikely comes on the first quiet window, long before the stop: that lead is what a
// speculative reply has to work with (the Complete wait less one window).
func TestEndLikelyLead(t *testing.T) {
	s, err := NewSemantic(DefaultSemanticConfig(levelSpeech, TranscriptFunc(func() string { return "Stop." })))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	evs, err := s.Feed(append(windows(10, true), windows(20, false)...), 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []Event{Onset{At: 0}, SpeechStarted{Start: 0}, Paused{At: 10 * 512}, EndLikely{At: 11 * 512, Transcript: "Stop."},
		SpeechStopped{End: 10*512 + int64(windowsFor(Wait(EagernessAuto, Complete)))*16, SpeechEnd: 10 * 512}}
	if !reflect.DeepEqual(evs, want) {
		t.Fatalf("events %+v, want %+v", evs, want)
	}
}

// Both detectors say Paused on the first quiet window of each pause in a held turn, naming where
// the speech ended (the conversation decodes a partial there); not in the silence before a turn,
// nor on every quiet window.
func TestPausedOncePerPause(t *testing.T) {
	hush, err := NewHush(DefaultHushConfig(levelSpeech))
	if err != nil {
		t.Fatal(err)
	}
	semantic, err := NewSemantic(DefaultSemanticConfig(levelSpeech, TranscriptFunc(func() string { return "I think" })))
	if err != nil {
		t.Fatal(err)
	}
	for name, d := range map[string]Detector{"hush": hush, "semantic": semantic} {
		t.Run(name, func(t *testing.T) {
			defer d.Close()
			var pcm []float32
			for _, part := range [][]float32{windows(4, false), windows(10, true), windows(5, false), windows(6, true), windows(100, false)} {
				pcm = append(pcm, part...)
			}
			evs, err := d.Feed(pcm, 0)
			if err != nil {
				t.Fatal(err)
			}
			var paused []int64
			for _, e := range evs {
				if p, ok := e.(Paused); ok {
					paused = append(paused, p.At)
				}
			}
			if want := []int64{14 * 512, 25 * 512}; !reflect.DeepEqual(paused, want) {
				t.Fatalf("paused at %v, want %v (events %v)", paused, want, evs)
			}
		})
	}
}

// listProber scores its windows from a list (then silence).
type listProber struct {
	buf   []float32
	probs []float32
}

func (p *listProber) Feed(pcm []float32, emit func(float32)) error {
	p.buf = append(p.buf, pcm...)
	for len(p.buf) >= 512 {
		prob := float32(0)
		if len(p.probs) > 0 {
			prob, p.probs = p.probs[0], p.probs[1:]
		}
		emit(prob)
		p.buf = p.buf[512:]
	}
	return nil
}
func (p *listProber) Window() int  { return 512 }
func (p *listProber) Pending() int { return len(p.buf) }
func (p *listProber) Reset()       {}
func (p *listProber) Close() error { return nil }

// Once the words read Complete, the last word's tail (windows straight after speech scoring
// between 0.5 and tailOpen) counts toward the wait; after a dip the same score is speech again.
func TestCompleteTailCountsAsQuiet(t *testing.T) {
	stopAfter := func(text string, probs []float32) int64 {
		t.Helper()
		speech := SpeechFunc(func() (Prober, error) { return &listProber{probs: probs}, nil })
		s, err := NewSemantic(DefaultSemanticConfig(speech, TranscriptFunc(func() string { return text })))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		evs, err := s.Feed(make([]float32, 512*120), 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if e, ok := e.(SpeechStopped); ok {
				return e.SpeechEnd / 512
			}
		}
		t.Fatalf("no stop: %v", evs)
		return 0
	}
	speech := []float32{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}
	tail := append(append([]float32(nil), speech...), 0.6, 0.6, 0.6, 0.6)
	if got := stopAfter("Stop.", tail); got != 10 {
		t.Errorf("complete: speech ends after window %d, want 10 (the 0.6 tail is quiet)", got)
	}
	if got := stopAfter("Stop", tail); got != 14 {
		t.Errorf("unfinished: speech ends after window %d, want 14 (the tail is speech)", got)
	}
	resumed := append(append([]float32(nil), speech...), 0.1, 0.6, 0.6)
	if got := stopAfter("Stop.", resumed); got != 13 {
		t.Errorf("complete, resumed after a dip: speech ends after window %d, want 13", got)
	}
}

// Onset comes on the first window of a run of speech, before the minimum speech makes it a turn;
// a run that breaks first ends with OnsetLost and no turn (issue 22: a reply pauses on the
// onset, 160 ms before speech_started).
func TestOnsetBeforeSpeechStarted(t *testing.T) {
	tests := map[string]struct {
		pcm  []float32
		want []Event
	}{
		"a run that lasts": {windows(8, true), []Event{Onset{At: 0}, SpeechStarted{Start: 0}}},
		"a spike":          {append(windows(3, true), windows(4, false)...), []Event{Onset{At: 0}, OnsetLost{At: 4 * 512}}},
		"a spike, then speech": {concat(windows(2, false), windows(2, true), windows(1, false), windows(6, true)),
			[]Event{Onset{At: 2 * 512}, OnsetLost{At: 5 * 512}, Onset{At: 5 * 512}, SpeechStarted{Start: 5 * 512}}},
		"silence": {windows(10, false), nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h, err := NewHush(HushConfig{Speech: levelSpeech, Threshold: 0.5, SilenceDuration: time.Second, MinSpeech: DefaultMinSpeech})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			evs, err := h.Feed(tc.pcm, 0)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(evs, tc.want) {
				t.Fatalf("events %+v, want %+v", evs, tc.want)
			}
		})
	}
	// With no minimum speech the first window is the turn: no Onset before it.
	h, err := NewHush(HushConfig{Speech: levelSpeech, Threshold: 0.5, SilenceDuration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if evs, _ := h.Feed(windows(2, true), 0); !reflect.DeepEqual(evs, []Event{SpeechStarted{Start: 0}}) {
		t.Fatalf("min speech 0: events %+v, want only SpeechStarted", evs)
	}
}
