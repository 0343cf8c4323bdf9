package turn

import (
	"fmt"
	"time"
)

// SampleRate is the rate detectors hear at; every position they take or report counts samples
// at it on the session's timeline.
const SampleRate = 16000

// Speech is a speech-probability model: each Prober it opens reads one stream of 16 kHz audio.
// Silero (speechcore/squelch) is one, adapted where the program is wired; a VAD pass shared with
// the squelch can be another. turn needs nothing else from the model.
type Speech interface {
	NewProber() (Prober, error)
}

// SpeechFunc adapts a function to Speech.
type SpeechFunc func() (Prober, error)

func (f SpeechFunc) NewProber() (Prober, error) { return f() }

// Prober gives the probability of speech in each window of a stream of 16 kHz audio, in order:
// Feed calls emit once per window completed (Window samples each) and holds the rest (Pending
// samples) for the next Feed. Reset returns it to silence; Close releases it. One owner.
type Prober interface {
	Feed(pcm16k []float32, emit func(prob float32)) error
	Window() int
	Pending() int
	Reset()
	Close() error
}

// Detector hears the user's audio and says who holds the floor. Feed takes 16 kHz audio and the
// position of its first sample on the session's timeline, in samples (consecutive feeds continue
// where the last ended), and returns the events that audio caused, in order. A Detector has one
// owner.
type Detector interface {
	Feed(pcm16k []float32, at int64) ([]Event, error)
	Floor() Floor
	// Reset forgets the turn in progress (input_audio_buffer.clear, a manual commit): the floor
	// goes Quiet and the model's state returns to silence.
	Reset()
	Close() error
}

// Floor is who holds the conversation's floor.
type Floor int

const (
	// Quiet: nobody has spoken since the detector started or was Reset.
	Quiet Floor = iota
	// Held: the user is speaking, or pausing inside a turn.
	Held
	// Yielded: the user finished; the floor is the assistant's until the user speaks again.
	Yielded
)

func (f Floor) String() string {
	switch f {
	case Quiet:
		return "quiet"
	case Held:
		return "held"
	case Yielded:
		return "yielded"
	}
	return fmt.Sprintf("Floor(%d)", int(f))
}

// Event is SpeechStarted or SpeechStopped, or a hint about the turn in progress that changes
// nobody's floor: Paused, and (Semantic only) EndLikely or EndUnlikely.
type Event interface{ isEvent() }

// SpeechStarted: the user took the floor (input_audio_buffer.speech_started). Start is where
// the speech began on the session's timeline (samples), less the prefix padding (never before
// the end of the previous turn, nor before 0).
type SpeechStarted struct {
	Start int64
}

// SpeechStopped: the user yielded the floor (input_audio_buffer.speech_stopped). End is where
// the turn was decided over on the session's timeline (samples): the end of the last speech
// plus the silence waited out, as OpenAI reports it. SpeechEnd is the end of the last speech
// alone.
type SpeechStopped struct {
	End       int64
	SpeechEnd int64
}

// EndLikely: in a pause of a held turn, the partial transcript reads as a finished sentence
// (Classify says Complete), so the turn ends if the pause lasts its wait. A listener may start
// on Transcript (the text judged) before the turn ends: that is what speculation does. At is the
// end of the window judged (samples). It comes once per distinct text judged: a newer partial
// that also reads finished sends another.
type EndLikely struct {
	At         int64
	Transcript string
}

// EndUnlikely: after EndLikely, the turn goes on: speech resumed in the pause (Resumed), or a
// newer partial no longer reads finished. What EndLikely named is not the turn's last word.
type EndUnlikely struct {
	At      int64
	Resumed bool
}

// Paused: in a held turn, the first quiet window after speech: the silence that may end the turn
// starts counting. At is where the speech ended (samples). A listener that transcribes the turn as
// it goes should decode it now, so that the text judged in the pause holds the last words (the
// conversation's partial at the pause); it comes again after each resumption.
type Paused struct {
	At int64
}

// Onset: while no turn is held, a window scored as speech begins a run that has not yet lasted
// the minimum speech (it may be a noise's spike): At is the run's first sample. SpeechStarted
// follows once the run lasts, OnsetLost if it breaks first. A listener that must stop talking
// at once (a reply being played, issue 22) can pause on it, 160 ms before SpeechStarted.
type Onset struct {
	At int64
}

// OnsetLost: the run Onset named broke before the minimum speech: no turn starts. At is the end
// of the first window scored as no speech.
type OnsetLost struct {
	At int64
}

func (Onset) isEvent()         {}
func (OnsetLost) isEvent()     {}
func (SpeechStarted) isEvent() {}
func (Paused) isEvent()        {}
func (SpeechStopped) isEvent() {}
func (EndLikely) isEvent()     {}
func (EndUnlikely) isEvent()   {}

// The compile-time checks that both detectors are Detectors.
var (
	_ Detector = (*Hush)(nil)
	_ Detector = (*Semantic)(nil)
)

// DefaultMinSpeech is how long speech must hold at or above the threshold before it takes the
// floor: squelch.DefaultConfirm (160 ms), for the same reason (the real model's lone spikes on
// noise run to 96 ms; no word is that short). The start is reported from the first window, not
// the last.
const DefaultMinSpeech = 160 * time.Millisecond

// machine is the state machine both detectors share; they differ only in how long a silence
// ends the turn (wait, in samples, asked afresh each quiet window).
type machine struct {
	stream    Prober
	open      float32
	close     float32
	minSpeech int
	prefix    int
	wait      func(silence int) int
	// hang, when set, says whether a window between the thresholds after speech still counts
	// as speech (Silero's hysteresis); nil is always. Semantic drops it once the words are done.
	hang func() bool
	// doneOpen, when hang says the words are done, is the probability a window straight after
	// speech must reach to be speech rather than the last word's tail (Semantic; 0: open).
	doneOpen float32
	// likely, when set (Semantic), says whether the text judged by the last wait reads finished.
	likely func() (transcript string, finished bool)

	floorState  Floor
	next        int64  // session position of the next sample fed, in samples
	windowStart int64  // session position of the window being filled
	runStart    int64  // first sample of the current run of speech windows; -1 when none
	silence     int    // samples of silence counted toward the wait; -1 while none is counting
	lastSpeech  int64  // end of the last speech window while Held
	turnFloor   int64  // the previous turn's end: no start is reported before it
	likelyText  string // the transcript EndLikely last named in this pause; "" when none stands
	tail        bool   // no window has scored below open since the last one at or above doneOpen
	closed      bool
}

func newMachine(model Speech, threshold float64, minSpeech, prefix time.Duration, wait func(int) int) (*machine, error) {
	if model == nil {
		return nil, fmt.Errorf("%w: no speech model (Silero: load it with squelch.Load and share it)", ErrConfig)
	}
	if minSpeech < 0 || prefix < 0 {
		return nil, fmt.Errorf("%w: min speech %v and prefix padding %v must be >= 0", ErrConfig, minSpeech, prefix)
	}
	stream, err := model.NewProber()
	if err != nil {
		return nil, fmt.Errorf("new turn detector: %w", err)
	}
	return &machine{
		stream:      stream,
		windowStart: -int64(stream.Pending()), // a shared pass may be mid-window when this joins it
		open:        float32(threshold),
		close:       float32(max(threshold-0.15, 0.01)), // Silero's own negative threshold
		minSpeech:   samples(minSpeech),
		prefix:      samples(prefix),
		wait:        wait,
		runStart:    -1,
		silence:     -1,
	}, nil
}

func (f *machine) Feed(pcm16k []float32, at int64) ([]Event, error) {
	if f.closed {
		return nil, ErrClosed
	}
	if pos := at; pos != f.next {
		// The caller's timeline moved (a gap, or audio it did not feed us): follow it, taking
		// any part window still pending as if it ran up to the new position.
		f.windowStart = pos - int64(f.stream.Pending())
		f.next = pos
	}
	var events []Event
	err := f.stream.Feed(pcm16k, func(prob float32) {
		from := f.windowStart
		f.windowStart += int64(f.stream.Window())
		events = f.step(events, prob, from, f.windowStart)
	})
	f.next += int64(len(pcm16k))
	if err != nil {
		return events, fmt.Errorf("turn feed: %w", err)
	}
	return events, nil
}

// step advances the machine by one window spanning [from, to) in the session's audio, appending
// the events it causes to events.
func (f *machine) step(events []Event, prob float32, from, to int64) []Event {
	if f.floorState != Held {
		if prob < f.open {
			if f.runStart >= 0 {
				events = append(events, OnsetLost{At: to})
			}
			f.runStart = -1
			return events
		}
		if f.runStart < 0 {
			f.runStart = from
			if to-f.runStart < int64(f.minSpeech) {
				events = append(events, Onset{At: from})
			}
		}
		if to-f.runStart < int64(f.minSpeech) {
			return events
		}
		f.floorState, f.silence, f.lastSpeech, f.tail = Held, -1, to, true
		start := max(f.runStart-int64(f.prefix), f.turnFloor, 0)
		f.runStart = -1
		return append(events, SpeechStarted{Start: start})
	}
	if prob >= f.open && f.tail && prob < f.doneOpen && f.hang != nil && !f.hang() {
		// The words read finished and the speech has not dipped since its last word: this is
		// that word's fading tail, which Silero scores as speech for up to ~170 ms. Quiet.
		prob = f.close - 1e-3
	} else if prob < f.open {
		f.tail = false
	}
	if prob >= f.open {
		f.silence, f.lastSpeech, f.tail = -1, to, prob >= f.doneOpen
		if f.likelyText != "" {
			f.likelyText = ""
			return append(events, EndUnlikely{At: from, Resumed: true})
		}
		return events
	}
	if prob >= f.close && f.silence < 0 && (f.hang == nil || f.hang()) {
		f.lastSpeech = to // still speech by Silero's hysteresis
		return events
	}
	if f.silence < 0 {
		events = append(events, Paused{At: f.lastSpeech})
	}
	f.silence = max(f.silence, 0) + f.stream.Window()
	if f.silence < f.wait(f.silence) {
		if ev := f.hint(to); ev != nil {
			events = append(events, ev)
		}
		return events
	}
	f.floorState, f.silence, f.turnFloor, f.likelyText = Yielded, -1, to, ""
	return append(events, SpeechStopped{End: to, SpeechEnd: f.lastSpeech})
}

// hint is EndLikely when the pause's transcript newly reads finished, EndUnlikely when what
// EndLikely named no longer does, else nil.
func (f *machine) hint(at int64) Event {
	if f.likely == nil {
		return nil
	}
	text, finished := f.likely()
	switch {
	case finished && text != f.likelyText:
		f.likelyText = text
		return EndLikely{At: at, Transcript: text}
	case !finished && f.likelyText != "":
		f.likelyText = ""
		return EndUnlikely{At: at}
	}
	return nil
}

func (f *machine) Floor() Floor { return f.floorState }

func (f *machine) Reset() {
	f.stream.Reset()
	f.floorState, f.runStart, f.silence, f.likelyText = Quiet, -1, -1, ""
	// A shared pass (Shared) is not reset by one reader: its part window still counts.
	f.windowStart, f.turnFloor = f.next-int64(f.stream.Pending()), f.next
}

func (f *machine) Close() error {
	if f.closed {
		return nil
	}
	f.closed = true
	return f.stream.Close()
}

func samples(d time.Duration) int {
	return int((d*SampleRate + time.Second/2) / time.Second)
}
