package turn

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"
)

const push250ms = rate / 4

// feedAll feeds pcm in pushes and returns the floor's events (hints left out: hint_test.go).
func feedAll(t *testing.T, d Detector, pcm []float32, pushSamples int) []Event {
	t.Helper()
	var events []Event
	for at := 0; at < len(pcm); at += pushSamples {
		ev, err := d.Feed(pcm[at:min(at+pushSamples, len(pcm))], int64(at))
		if err != nil {
			t.Fatalf("feed at %d: %v", at, err)
		}
		events = append(events, ev...)
	}
	return floorOnly(events)
}

func newHush(t *testing.T, mutate func(*HushConfig)) *Hush {
	t.Helper()
	cfg := DefaultHushConfig(needModel(t))
	if mutate != nil {
		mutate(&cfg)
	}
	h, err := NewHush(cfg)
	if err != nil {
		t.Fatalf("NewHush: %v", err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func kinds(events []Event) string {
	s := ""
	for _, e := range events {
		switch e.(type) {
		case SpeechStarted:
			s += "S"
		case SpeechStopped:
			s += "E"
		}
	}
	return s
}

func TestFloorString(t *testing.T) {
	for f, want := range map[Floor]string{Quiet: "quiet", Held: "held", Yielded: "yielded", Floor(9): "Floor(9)"} {
		if f.String() != want {
			t.Errorf("%d: %q, want %q", int(f), f.String(), want)
		}
	}
}

func TestHushConfig(t *testing.T) {
	tests := map[string]struct {
		mutate  func(*HushConfig)
		wantErr bool
	}{
		"defaults":          {},
		"threshold 0":       {mutate: func(c *HushConfig) { c.Threshold = 0 }},
		"threshold 1":       {mutate: func(c *HushConfig) { c.Threshold = 1 }},
		"threshold above 1": {mutate: func(c *HushConfig) { c.Threshold = 1.2 }, wantErr: true},
		"threshold below 0": {mutate: func(c *HushConfig) { c.Threshold = -0.1 }, wantErr: true},
		"negative silence":  {mutate: func(c *HushConfig) { c.SilenceDuration = -time.Millisecond }, wantErr: true},
		"negative prefix":   {mutate: func(c *HushConfig) { c.PrefixPadding = -time.Millisecond }, wantErr: true},
		"no model":          {mutate: func(c *HushConfig) { c.Speech = nil }, wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg := DefaultHushConfig(needModel(t))
			if tc.mutate != nil {
				tc.mutate(&cfg)
			}
			h, err := NewHush(cfg)
			if tc.wantErr {
				if !errors.Is(err, ErrConfig) {
					t.Fatalf("NewHush: %v, want ErrConfig", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewHush: %v", err)
			}
			h.Close()
		})
	}
}

// Hush on real speech and silence: the events, the floor, and timestamps from sample counts.
func TestHushTurns(t *testing.T) {
	needModel(t)
	goforward := trimSpeech(pocketsphinx(t, "goforward.raw"))
	numbers := trimSpeech(pocketsphinx(t, "numbers.raw"))
	tests := map[string]struct {
		pcm   []float32
		want  string // S = speech_started, E = speech_stopped
		floor Floor
		// onsets are where each turn's speech begins in pcm, in samples (to check AudioStartMs)
		onsets []int
	}{
		"silence only":   {pcm: quiet(5, 1), want: "", floor: Quiet},
		"digital zeros":  {pcm: make([]float32, 5*rate), want: "", floor: Quiet},
		"white noise":    {pcm: whiteNoise(20, 2), want: "", floor: Quiet},
		"one utterance":  {pcm: concat(quiet(1, 1), goforward, quiet(1.5, 2)), want: "SE", floor: Yielded, onsets: []int{rate}},
		"still speaking": {pcm: concat(quiet(1, 1), goforward), want: "S", floor: Held, onsets: []int{rate}},
		"pause shorter than silence_duration is one turn": {
			pcm: concat(quiet(1, 1), goforward, quiet(0.25, 3), numbers, quiet(1.5, 2)), want: "SE", floor: Yielded, onsets: []int{rate},
		},
		"pause longer than silence_duration is two turns": {
			pcm:  concat(quiet(1, 1), goforward, quiet(1.2, 3), numbers, quiet(1.5, 2)),
			want: "SESE", floor: Yielded, onsets: []int{rate, rate + len(goforward) + int(1.2*rate)},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := newHush(t, nil)
			events := feedAll(t, h, tc.pcm, push250ms)
			if got := kinds(events); got != tc.want {
				t.Fatalf("events %s (%v), want %s", got, events, tc.want)
			}
			if h.Floor() != tc.floor {
				t.Fatalf("floor %v, want %v", h.Floor(), tc.floor)
			}
			starts := 0
			for _, e := range events {
				switch e := e.(type) {
				case SpeechStarted:
					// The turn's audio must include the onset; the model lags it by a window or
					// two and the padding reaches 300 ms further back.
					onset := msOf(tc.onsets[starts])
					if ms(e.Start) > onset || ms(e.Start) < onset-300-100 {
						t.Errorf("turn %d: audio_start_ms %d, want in [%d, %d] (onset %d ms, 300 ms padding)", starts, ms(e.Start), onset-400, onset, onset)
					}
					starts++
				case SpeechStopped:
					// 500 ms of silence is 16 windows of 32 ms.
					if ms(e.End)-ms(e.SpeechEnd) != 512 {
						t.Errorf("audio_end_ms %d - speech end %d = %d, want the 512 ms of silence waited out", ms(e.End), ms(e.SpeechEnd), ms(e.End)-ms(e.SpeechEnd))
					}
				}
			}
			t.Logf("%v", events)
		})
	}
}

// Time comes from sample counts: the push size changes nothing.
func TestEventsIndependentOfPushSize(t *testing.T) {
	needModel(t)
	pcm := concat(quiet(1, 1), sileroTestfile(t, "samples2.pcm"), quiet(1.5, 2), trimSpeech(pocketsphinx(t, "numbers.raw")), quiet(2, 4))
	var first []Event
	for _, size := range []int{push250ms, 1, 511, 7919, len(pcm)} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			h := newHush(t, nil)
			var events []Event
			if size == 1 {
				// one sample at a time is slow under -race; 3 s of it proves the carry
				events = feedAll(t, h, pcm[:3*rate], 1)
				events = append(events, feedRest(t, h, pcm, 3*rate)...)
			} else {
				events = feedAll(t, h, pcm, size)
			}
			if first == nil {
				first = events
				t.Logf("%v", events)
				return
			}
			if !reflect.DeepEqual(events, first) {
				t.Fatalf("push %d: %v, 250 ms pushes: %v", size, events, first)
			}
		})
	}
}

func feedRest(t *testing.T, d Detector, pcm []float32, from int) []Event {
	ev, err := d.Feed(pcm[from:], int64(from))
	if err != nil {
		t.Fatal(err)
	}
	return floorOnly(ev)
}

// The caller's timeline wins: audio fed after a gap is stamped where the caller says it is.
func TestTimelineFollowsAt(t *testing.T) {
	h := newHush(t, nil)
	if ev, err := h.Feed(quiet(1, 1), 0); err != nil || len(ev) != 0 {
		t.Fatalf("quiet: %v %v", ev, err)
	}
	speech := concat(quiet(1, 2), trimSpeech(pocketsphinx(t, "goforward.raw")), quiet(1, 3))
	ev, err := h.Feed(speech, 10*rate)
	if err != nil {
		t.Fatal(err)
	}
	ev = floorOnly(ev)
	if kinds(ev) != "SE" {
		t.Fatalf("events %v", ev)
	}
	if start := ms(ev[0].(SpeechStarted).Start); start < 10_000+1000-400 || start > 10_000+1000 {
		t.Fatalf("audio_start_ms %d, want about 10700 (fed at 10 s, speech 1 s in, 300 ms padding)", start)
	}
}

// Prefix padding never reaches back past the previous turn's end or a Reset.
func TestPrefixStopsAtPreviousTurn(t *testing.T) {
	goforward := trimSpeech(pocketsphinx(t, "goforward.raw"))
	h := newHush(t, func(c *HushConfig) { c.PrefixPadding = 5 * time.Second; c.SilenceDuration = 200 * time.Millisecond })
	events := feedAll(t, h, concat(quiet(1, 1), goforward, quiet(0.6, 2), goforward, quiet(1, 3)), push250ms)
	if kinds(events) != "SESE" {
		t.Fatalf("events %v", events)
	}
	if s := ms(events[0].(SpeechStarted).Start); s != 0 {
		t.Errorf("first start %d, want 0 (5 s of padding clamps at the session start)", s)
	}
	if s, e := ms(events[2].(SpeechStarted).Start), ms(events[1].(SpeechStopped).End); s != e {
		t.Errorf("second start %d, want the first turn's end %d", s, e)
	}
}

func TestResetAndClose(t *testing.T) {
	h := newHush(t, nil)
	speech := concat(quiet(0.5, 1), trimSpeech(pocketsphinx(t, "goforward.raw")))
	ev, err := h.Feed(speech, 0)
	if err != nil || kinds(ev) != "S" || h.Floor() != Held {
		t.Fatalf("speech: %v %v floor %v", ev, err, h.Floor())
	}
	h.Reset()
	if h.Floor() != Quiet {
		t.Fatalf("after Reset: floor %v", h.Floor())
	}
	at := int64(len(speech))
	ev, err = h.Feed(quiet(2, 2), at)
	if err != nil || len(ev) != 0 {
		t.Fatalf("quiet after Reset: %v %v (no stop for a turn that was reset)", ev, err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Feed(quiet(1, 1), 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("Feed after Close: %v, want ErrClosed", err)
	}
}

// The floor's cost per 250 ms push: one Silero pass per window plus the state machine.
func BenchmarkHushFeed250ms(b *testing.B) {
	cfg := DefaultHushConfig(needModel(b))
	h, err := NewHush(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	pcm := sileroTestfile(b, "samples2.pcm")
	b.ResetTimer()
	pos := 0
	for range b.N {
		at := pos % (len(pcm) - push250ms)
		if _, err := h.Feed(pcm[at:at+push250ms], int64(pos)); err != nil {
			b.Fatal(err)
		}
		pos += push250ms
	}
}
