package turn

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Eagerness is semantic_vad's eagerness: how readily a pause ends the turn.
type Eagerness int

const (
	EagernessAuto Eagerness = iota // auto is medium
	EagernessLow
	EagernessMedium
	EagernessHigh
)

// ParseEagerness reads the protocol's "low", "medium", "high" or "auto" ("" is auto).
func ParseEagerness(s string) (Eagerness, error) {
	switch s {
	case "", "auto":
		return EagernessAuto, nil
	case "low":
		return EagernessLow, nil
	case "medium":
		return EagernessMedium, nil
	case "high":
		return EagernessHigh, nil
	}
	return 0, fmt.Errorf("%w: eagerness %q: want low, medium, high or auto", ErrConfig, s)
}

func (e Eagerness) String() string {
	switch e {
	case EagernessAuto:
		return "auto"
	case EagernessLow:
		return "low"
	case EagernessMedium:
		return "medium"
	case EagernessHigh:
		return "high"
	}
	return fmt.Sprintf("Eagerness(%d)", int(e))
}

// Ending is what the partial transcript says about the turn so far.
type Ending int

const (
	// NoWords: nothing transcribed yet (the transcriber is behind, or the speech was not words).
	NoWords Ending = iota
	// Unfinished: words without a sentence end, e.g. "I think the answer".
	Unfinished
	// Complete: a sentence ending in . ? or ! whose last word does not lead on.
	Complete
	// Trailing: ends on a conjunction or filler ("and", "so", "um"), a comma or an ellipsis:
	// the speaker has more to say.
	Trailing
)

func (e Ending) String() string {
	switch e {
	case NoWords:
		return "no-words"
	case Unfinished:
		return "unfinished"
	case Complete:
		return "complete"
	case Trailing:
		return "trailing"
	}
	return fmt.Sprintf("Ending(%d)", int(e))
}

// leadsOn are last words after which a speaker is not done, even when a transcriber has put a
// full stop after them.
var leadsOn = map[string]bool{
	// conjunctions
	"and": true, "so": true, "but": true, "or": true, "because": true, "cause": true, "cos": true,
	"if": true, "although": true, "though": true, "unless": true, "whether": true,
	// fillers
	"um": true, "umm": true, "uh": true, "uhh": true, "uhm": true, "er": true, "erm": true, "hmm": true, "ah": true,
	// articles: nothing ends on one
	"the": true, "a": true, "an": true,
	// possessives a noun must follow
	"my": true, "your": true, "our": true, "their": true,
}

// The same for the other languages voiced serves (issue 21): Spanish, French, Italian and
// Portuguese conjunctions, articles and possessives, and fillers (Hindi is transcribed in
// Devanagari: its words are not listed, its punctuation still counts).
var leadsOnOther = map[string]bool{
	// es
	"y": true, "pero": true, "porque": true, "aunque": true, "si": true, "el": true, "la": true, "los": true,
	"las": true, "un": true, "una": true, "mi": true, "tu": true, "su": true, "nuestro": true, "eh": true,
	// fr
	"et": true, "mais": true, "ou": true, "parce": true, "le": true, "les": true, "une": true, "des": true,
	"mon": true, "ma": true, "mes": true, "ton": true, "euh": true, "bah": true,
	// it
	"e": true, "perché": true, "il": true, "lo": true, "gli": true, "uno": true, "mio": true,
	// pt
	"mas": true, "os": true, "um": true, "uma": true, "meu": true, "minha": true, "né": true,
	// es, pt, it: "o" (or / the)
	"o": true,
}

// leadOnUnlessAsked are prepositions a statement does not end on ("I want to book a table for")
// while a question may ("What are you looking for?").
var leadOnUnlessAsked = map[string]bool{
	"to": true, "for": true, "with": true, "about": true, "of": true, "from": true, "at": true, "into": true,
}

// Classify reads how a partial transcript ends.
func Classify(text string) Ending {
	text = strings.TrimRightFunc(text, func(r rune) bool {
		return unicode.IsSpace(r) || strings.ContainsRune("\"'”’)]»", r)
	})
	if strings.IndexFunc(text, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) < 0 {
		return NoWords
	}
	if strings.HasSuffix(text, "...") || strings.HasSuffix(text, "…") || strings.HasSuffix(text, ",") ||
		strings.HasSuffix(text, "-") || strings.HasSuffix(text, "—") || strings.HasSuffix(text, ";") || strings.HasSuffix(text, ":") {
		return Trailing
	}
	words := strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && r != '\'' })
	if len(words) > 0 {
		last := strings.ToLower(words[len(words)-1])
		if leadsOn[last] || leadsOnOther[last] || leadOnUnlessAsked[last] && !strings.HasSuffix(text, "?") {
			return Trailing
		}
	}
	switch text[len(text)-1] {
	case '.', '?', '!':
		return Complete
	}
	if r, _ := utf8.DecodeLastRuneInString(text); r == '。' || r == '？' || r == '！' {
		return Complete
	}
	return Unfinished
}

// Waits at medium eagerness (and auto), by how the transcript ends. Low doubles them, high
// halves them, so the trailing wait is semantic_vad's maximum: 8 s low, 4 s medium, 2 s high.
// Hush waits 500 ms whatever was said. Tuned on the turn-end corpus (TestTurnEndCorpus, LLM.md):
// Silero itself scores speech for 0–170 ms past a word's end, so a finished sentence's 200 ms
// puts the median turn end within 250 ms of the speech end; words without a sentence end
// (Whisper ends a finished sentence with . ? !) wait 2 s, so a 1.5 s thinking pause after
// "I was wondering if you could" is not cut.
var mediumWaits = map[Ending]time.Duration{
	Complete:   200 * time.Millisecond,
	Unfinished: 2 * time.Second,
	NoWords:    800 * time.Millisecond,
	Trailing:   4 * time.Second,
}

// Wait is the silence that ends a turn ending so, at eagerness e.
func Wait(e Eagerness, ending Ending) time.Duration {
	w := mediumWaits[ending]
	switch e {
	case EagernessLow:
		return 2 * w
	case EagernessHigh:
		return w / 2
	}
	return w
}

// Transcript gives the latest partial transcript of the turn in progress. Partial must return at
// once with whatever text is already in hand: it is asked on every quiet window, in the audio
// path, and the floor is never decided behind a network call.
type Transcript interface {
	Partial() string
}

// TranscriptFunc adapts a function to Transcript.
type TranscriptFunc func() string

func (f TranscriptFunc) Partial() string { return f() }

// SemanticConfig is semantic_vad.
type SemanticConfig struct {
	// Speech is the shared speech-probability model (Silero).
	Speech Speech
	// Eagerness scales the waits (Wait).
	Eagerness Eagerness
	// Transcript is read on each quiet window; nil reads as no words.
	Transcript Transcript
	// PrefixPadding is the audio before the detected start that the turn includes.
	PrefixPadding time.Duration
	// MinSpeech is how long speech must hold before it takes the floor.
	MinSpeech time.Duration
}

// DefaultSemanticConfig is semantic_vad at auto eagerness with server_vad's 300 ms prefix.
func DefaultSemanticConfig(model Speech, transcript Transcript) SemanticConfig {
	return SemanticConfig{Speech: model, Transcript: transcript, PrefixPadding: 300 * time.Millisecond, MinSpeech: DefaultMinSpeech}
}

// semanticThreshold is Silero's own default: semantic_vad exposes no threshold.
const semanticThreshold = 0.5

// Semantic ends a turn on silence weighed against the words so far: a finished sentence yields
// the floor sooner than Hush, a trailing "and…" holds it longer. In a pause it also says what it
// expects (EndLikely when the words read finished, EndUnlikely when speech resumes after that).
type Semantic struct {
	*machine
	cfg        SemanticConfig
	lastEnding Ending
	lastText   string
}

// NewSemantic validates cfg and starts Quiet.
func NewSemantic(cfg SemanticConfig) (*Semantic, error) {
	if cfg.Eagerness < EagernessAuto || cfg.Eagerness > EagernessHigh {
		return nil, fmt.Errorf("%w: eagerness %v", ErrConfig, cfg.Eagerness)
	}
	s := &Semantic{cfg: cfg}
	f, err := newMachine(cfg.Speech, semanticThreshold, cfg.MinSpeech, cfg.PrefixPadding, s.wait)
	if err != nil {
		return nil, err
	}
	f.hang = s.hang
	f.doneOpen = tailOpen
	f.likely = func() (string, bool) { return s.lastText, s.lastEnding == Complete }
	s.machine = f
	return s, nil
}

// hang keeps Silero's hysteresis (a window between the thresholds after speech is still speech)
// unless the words say the turn is done: then the fading tail of the last word, which Silero
// scores between the thresholds for up to ~200 ms, already counts toward the wait.
func (s *Semantic) hang() bool {
	text := ""
	if s.cfg.Transcript != nil {
		text = s.cfg.Transcript.Partial()
	}
	return Classify(text) != Complete
}

func (s *Semantic) wait(int) int {
	text := ""
	if s.cfg.Transcript != nil {
		text = s.cfg.Transcript.Partial()
	}
	s.lastEnding, s.lastText = Classify(text), text
	return samples(Wait(s.cfg.Eagerness, s.lastEnding))
}

// LastEnding reports how the transcript ended when the detector last weighed a silence.
func (s *Semantic) LastEnding() Ending { return s.lastEnding }

// Config reports the configuration the detector runs with.
func (s *Semantic) Config() SemanticConfig { return s.cfg }

// tailOpen is the probability a window right after speech (no dip below the threshold since)
// must reach to count as speech once the words read Complete: Silero keeps scoring the last
// word's fading tail above 0.5 for up to ~170 ms. Tuned on the turn-end corpus (LLM.md): 0.7
// leaves medium's max at 306 ms, 0.8 brings it to 282 ms (0.9: 280), nothing cut or split. After
// a dip, speech is 0.5 again, so a speaker who goes on is heard as before.
const tailOpen = 0.8
