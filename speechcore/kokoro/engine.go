package kokoro

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/sentence"
	"github.com/voiced/voiced/speechcore/runtime"
)

// SampleRate is Kokoro's output rate.
const SampleRate = 24000

// Speed limits (kokoro-onnx asserts the same range); 0 in a request means DefaultSpeed.
const (
	MinSpeed     = 0.5
	MaxSpeed     = 2.0
	DefaultSpeed = 1.0
)

// PreferredVoice is the default voice when it is mounted and Options.DefaultVoice is empty.
const PreferredVoice = "af_heart"

// Files in the model directory (assets.KokoroDir of a mount).
const (
	ModelFile  = "model.onnx"
	ConfigFile = "config.json"
	VoicesDir  = "voices"
	LexiconDir = "lexicon"
)

// Options configure an Engine. The zero value is valid.
type Options struct {
	// DefaultVoice is spoken when a request names no voice; "" means PreferredVoice when mounted,
	// else the first mounted voice by name.
	DefaultVoice string
	// WarmupText is synthesised once by Load (default "Hello there.").
	WarmupText string
}

// Request is one text to speak.
type Request struct {
	Text  string
	Voice string  // "" = the engine's default voice
	Speed float32 // 0 = DefaultSpeed; else MinSpeed..MaxSpeed
	// SplitChars: 0 speaks every sentence as its own chunk; > 0 speaks the first sentence alone,
	// then batches whole sentences up to this many characters per chunk.
	SplitChars int
	// OnWait, when set, is called (once per chunk) if another caller holds the model and this
	// request has to wait for it.
	OnWait func()
}

// Chunk is the audio of one piece of a request, emitted as soon as it exists.
type Chunk struct {
	Index    int
	Text     string  // the piece as given (before normalisation)
	Phonemes string  // what was fed to the model, vocab symbols only
	PCM      []int16 // mono, SampleRate
}

// Stats are what Load measured, plus the queue now.
type Stats struct {
	LoadMs   float64
	WarmupMs float64
	// ResidentDeltaBytes is the VmRSS delta across load and warm-up (0 where /proc is absent).
	ResidentDeltaBytes int64
	QueueDepth         int // callers waiting for the model permit now
}

// Engine is Kokoro loaded on ONNX Runtime. It is safe for concurrent use: one permit lets one
// forward pass run at a time; others wait in line (context-aware).
type Engine struct {
	dir          string
	vocab        *Vocab
	g2p          *G2P // American English (misaki lexicon + espeak-ng en-us)
	g2pMu        sync.Mutex
	g2ps         map[byte]*G2P // the other languages' G2P by voice prefix, made on first use
	voices       map[string]*Voice
	names        []string
	defaultVoice string

	session    *runtime.Session
	tokenInput string
	tokenType  ort.TensorElementDataType
	speedType  ort.TensorElementDataType

	permit  chan struct{} // holds one token while a forward pass runs
	waiting atomic.Int64
	closed  atomic.Bool
	stats   Stats
}

// Load reads the model directory dir (a mount's models/kokoro-82m: model.onnx, config.json,
// voices/*.bin, optional lexicon/), opens the model on env with the input names and dtypes it
// declares, and runs one warm-up pass before returning.
func Load(ctx context.Context, env *runtime.Env, dir string, opts Options) (*Engine, error) {
	start := time.Now()
	rss0 := residentBytes()
	e := &Engine{dir: dir, permit: make(chan struct{}, 1)}
	var err error
	if e.vocab, err = LoadVocab(filepath.Join(dir, ConfigFile)); err != nil {
		return nil, fmt.Errorf("load kokoro: %w", err)
	}
	lex, err := LoadLexicon(filepath.Join(dir, LexiconDir))
	if err != nil {
		return nil, fmt.Errorf("load kokoro: %w", err)
	}
	e.g2p = NewG2P(lex)
	if e.voices, e.names, err = loadVoices(filepath.Join(dir, VoicesDir)); err != nil {
		return nil, fmt.Errorf("load kokoro: %w", err)
	}
	switch {
	case opts.DefaultVoice != "":
		if _, ok := e.voices[opts.DefaultVoice]; !ok {
			return nil, fmt.Errorf("load kokoro: default %w", e.unknownVoice(opts.DefaultVoice))
		}
		e.defaultVoice = opts.DefaultVoice
	case e.voices[PreferredVoice] != nil:
		e.defaultVoice = PreferredVoice
	default:
		e.defaultVoice = e.names[0]
	}
	if err := e.openSession(env, filepath.Join(dir, ModelFile)); err != nil {
		return nil, fmt.Errorf("load kokoro: %w", err)
	}
	e.stats.LoadMs = ms(time.Since(start))

	warm := time.Now()
	text := opts.WarmupText
	if text == "" {
		text = "Hello there."
	}
	if err := e.Speak(ctx, Request{Text: text}, func(Chunk) error { return nil }); err != nil {
		e.Close()
		return nil, fmt.Errorf("kokoro warm-up: %w", err)
	}
	e.stats.WarmupMs = ms(time.Since(warm))
	if rss0 > 0 {
		e.stats.ResidentDeltaBytes = residentBytes() - rss0
	}
	return e, nil
}

// openSession reads the model's declared I/O: the token input is input_ids, else tokens (int64
// or int32); style float32; speed float32 or int32 (rounded); the output is waveform or audio,
// else the first, flattened whatever its rank.
func (e *Engine) openSession(env *runtime.Env, path string) error {
	ins, outs, err := env.Inspect(path)
	if err != nil {
		return err
	}
	have := map[string]ort.InputOutputInfo{}
	for _, in := range ins {
		have[in.Name] = in
	}
	for _, name := range []string{"input_ids", "tokens"} {
		if in, ok := have[name]; ok {
			e.tokenInput, e.tokenType = name, in.DataType
			break
		}
	}
	if e.tokenInput == "" {
		return fmt.Errorf("%w: %s has no input_ids or tokens input", ErrModelIO, path)
	}
	if e.tokenType != ort.TensorElementDataTypeInt64 && e.tokenType != ort.TensorElementDataTypeInt32 {
		return fmt.Errorf("%w: %s input %s is %v, want int64 or int32", ErrModelIO, path, e.tokenInput, e.tokenType)
	}
	if st, ok := have["style"]; !ok || st.DataType != ort.TensorElementDataTypeFloat {
		return fmt.Errorf("%w: %s needs a float32 style input", ErrModelIO, path)
	}
	sp, ok := have["speed"]
	if !ok || (sp.DataType != ort.TensorElementDataTypeFloat && sp.DataType != ort.TensorElementDataTypeInt32) {
		return fmt.Errorf("%w: %s needs a float32 or int32 speed input", ErrModelIO, path)
	}
	e.speedType = sp.DataType
	for _, in := range ins {
		if in.Name != e.tokenInput && in.Name != "style" && in.Name != "speed" {
			return fmt.Errorf("%w: %s has an unexpected input %q", ErrModelIO, path, in.Name)
		}
	}
	if len(outs) == 0 {
		return fmt.Errorf("%w: %s has no outputs", ErrModelIO, path)
	}
	out := outs[0]
	for _, o := range outs {
		if o.Name == "waveform" || o.Name == "audio" {
			out = o
			break
		}
	}
	if out.DataType != ort.TensorElementDataTypeFloat {
		return fmt.Errorf("%w: %s output %s is %v, want float32", ErrModelIO, path, out.Name, out.DataType)
	}
	s, err := env.NewSession(path, []string{out.Name})
	if err != nil {
		return err
	}
	e.session = s
	return nil
}

// Voices lists the mounted voices by name.
func (e *Engine) Voices() []string { return append([]string(nil), e.names...) }

// DefaultVoice is the voice spoken when a request names none.
func (e *Engine) DefaultVoice() string { return e.defaultVoice }

// HasVoice reports whether name is mounted.
func (e *Engine) HasVoice(name string) bool { return e.voices[name] != nil }

// Vocab is the model's vocabulary.
func (e *Engine) Vocab() *Vocab { return e.vocab }

// G2P is the engine's grapheme-to-phoneme converter.
func (e *Engine) G2P() *G2P { return e.g2p }

// Stats reports the load figures and the queue now.
func (e *Engine) Stats() Stats {
	s := e.stats
	s.QueueDepth = e.QueueDepth()
	return s
}

// QueueDepth is the number of callers waiting for the model permit.
func (e *Engine) QueueDepth() int { return int(e.waiting.Load()) }

func (e *Engine) unknownVoice(name string) error {
	return fmt.Errorf("%w: %q (mounted: %s)", ErrUnknownVoice, name, strings.Join(e.names, ", "))
}

// voice resolves a request's voice name ("" = default).
func (e *Engine) voice(name string) (*Voice, error) {
	if name == "" {
		name = e.defaultVoice
	}
	v, ok := e.voices[name]
	if !ok {
		return nil, e.unknownVoice(name)
	}
	if err := checkLanguage(name); err != nil {
		return nil, err
	}
	return v, nil
}

// CheckSpeed validates a request's speed and returns the one to use (0 → DefaultSpeed).
func CheckSpeed(speed float32) (float32, error) {
	if speed == 0 {
		return DefaultSpeed, nil
	}
	if !(speed >= MinSpeed && speed <= MaxSpeed) {
		return 0, fmt.Errorf("%w: %g (allowed %g to %g)", ErrSpeed, speed, MinSpeed, MaxSpeed)
	}
	return speed, nil
}

// Check validates a request's voice and speed without speaking.
func (e *Engine) Check(voice string, speed float32) error {
	if _, err := e.voice(voice); err != nil {
		return err
	}
	_, err := CheckSpeed(speed)
	return err
}

// MaxPieceChars bounds the text one chunk is made from: a sentence or batch longer than this is
// broken at word boundaries (sentence.Cut) and each part is synthesised and emitted on its own.
// Kokoro takes at most MaxPhonemes (510) ids a call, about 400 characters of English; without a
// bound a 240 KB unpunctuated request was one chunk of ~1 GB of audio held whole before the
// first byte went out. A part is at most 4×MaxPieceChars characters (one spaceless word), so a
// chunk's audio is a few model calls at most, whatever the request.
const MaxPieceChars = 400

// Speak says req.Text: it is cut into sentences (the first alone; later ones batched when
// req.SplitChars > 0), a piece over MaxPieceChars is broken at word boundaries, each piece is
// normalised, phonemised and synthesised, and emit is called with each chunk's audio as soon as
// it exists. Pieces with nothing speakable are skipped; a text with nothing speakable at all is
// ErrNothingToSay. An error from emit stops Speak and is returned.
func (e *Engine) Speak(ctx context.Context, req Request, emit func(Chunk) error) error {
	v, err := e.voice(req.Voice)
	if err != nil {
		return err
	}
	speed, err := CheckSpeed(req.Speed)
	if err != nil {
		return err
	}
	var pieces []string
	if req.SplitChars > 0 {
		sp := NewSplitter(SplitterOptions{FirstAlone: true, SplitChars: req.SplitChars})
		pieces = sp.Batch(SplitSentences(req.Text))
	} else {
		pieces = SplitSentences(req.Text)
	}
	index := 0
	for _, piece := range pieces {
		if index, err = e.speakPiece(ctx, piece, v, speed, req.OnWait, index, emit); err != nil {
			return err
		}
	}
	if index == 0 {
		return ErrNothingToSay
	}
	return nil
}

// speakPiece synthesises one piece, emitting each chunk numbered from index as soon as it
// exists; it returns the next index. A piece is cut at word boundaries into parts of at most
// MaxPieceChars (sentence.Cut), each part is normalised and cut again (Normalize spells numbers
// out: 400 characters of digits read as ~3,600 of words), and each model call is its own chunk:
// a chunk is at most MaxPhonemes of audio, whatever the text. A chunk's Text is the part as given
// when the part is spoken in one chunk; the normalised words it speaks when normalising made the
// part longer than MaxPieceChars; "" on the later chunks of a text whose phonemes need more
// than one model call (one long word).
func (e *Engine) speakPiece(ctx context.Context, piece string, v *Voice, speed float32, onWait func(), index int, emit func(Chunk) error) (int, error) {
	lang, _ := VoiceLanguage(v.Name)
	for _, part := range sentence.Cut(piece, MaxPieceChars) {
		spoken := sentence.Cut(normalizeFor(lang, part), MaxPieceChars)
		for _, words := range spoken {
			ps, err := e.phonemesIn(lang, words)
			if errors.Is(err, ErrNothingToSay) {
				continue
			}
			if err != nil {
				return index, err
			}
			text := part
			if len(spoken) > 1 {
				text = words
			}
			for _, batch := range SplitPhonemes(ps, MaxPhonemes) {
				pcm, err := e.synthesizeBatch(ctx, batch, v, speed, onWait)
				if err != nil {
					return index, err
				}
				if err := emit(Chunk{Index: index, Text: text, Phonemes: batch, PCM: pcm}); err != nil {
					return index, err
				}
				index++
				text = ""
			}
		}
	}
	return index, nil
}

// Synthesize speaks req.Text as one piece, without cutting it into sentences: what a caller that
// does its own splitting (the speak stream) uses. A text over MaxPieceChars is still broken at
// word boundaries, and each part is emitted as its own chunk (Index from 0) as soon as it
// exists, so no text holds more than a part's audio at once. req.SplitChars is ignored. Text with
// nothing speakable is ErrNothingToSay; an error from emit stops Synthesize and is returned.
func (e *Engine) Synthesize(ctx context.Context, req Request, emit func(Chunk) error) error {
	v, err := e.voice(req.Voice)
	if err != nil {
		return err
	}
	speed, err := CheckSpeed(req.Speed)
	if err != nil {
		return err
	}
	n, err := e.speakPiece(ctx, req.Text, v, speed, req.OnWait, 0, emit)
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNothingToSay
	}
	return nil
}

// Phonemes normalises text and returns its phonemes as the model gets them (vocab symbols
// only), or ErrNothingToSay when nothing but punctuation and spaces remains.
func (e *Engine) Phonemes(text string) (string, error) {
	return e.phonemesOf(Normalize(text))
}

// PhonemesFor is Phonemes in a voice's language ("" = the default voice's).
func (e *Engine) PhonemesFor(voice, text string) (string, error) {
	v, err := e.voice(voice)
	if err != nil {
		return "", err
	}
	lang, _ := VoiceLanguage(v.Name)
	return e.phonemesIn(lang, normalizeFor(lang, text))
}

// phonemesOf is Phonemes of text already normalised.
func (e *Engine) phonemesOf(text string) (string, error) {
	return e.phonemesIn(Languages[0], text)
}

// phonemesIn is phonemesOf in a language's G2P.
func (e *Engine) phonemesIn(lang Language, text string) (string, error) {
	ps, err := e.languageG2P(lang).Phonemize(text)
	if err != nil {
		return "", err
	}
	ps = strings.TrimSpace(e.vocab.Filter(ps))
	if !speakable(ps) {
		return "", ErrNothingToSay
	}
	return ps, nil
}

func speakable(ps string) bool {
	return strings.IndexFunc(ps, func(r rune) bool {
		return r != ' ' && !strings.ContainsRune(keptPunctuation, r)
	}) >= 0
}

// SynthesizePhonemes speaks a phoneme string directly (symbols outside the vocab are dropped;
// over MaxPhonemes it is split as SplitPhonemes does). voice "" is the default; speed 0 is 1.
func (e *Engine) SynthesizePhonemes(ctx context.Context, phonemes, voice string, speed float32) ([]int16, error) {
	v, err := e.voice(voice)
	if err != nil {
		return nil, err
	}
	if speed, err = CheckSpeed(speed); err != nil {
		return nil, err
	}
	ps := strings.TrimSpace(e.vocab.Filter(phonemes))
	if ps == "" {
		return nil, ErrNothingToSay
	}
	return e.synthesize(ctx, ps, v, speed, nil)
}

// synthesize runs the model over vocab-filtered phonemes, one call per batch of ≤ MaxPhonemes.
func (e *Engine) synthesize(ctx context.Context, ps string, v *Voice, speed float32, onWait func()) ([]int16, error) {
	var pcm []int16
	for _, batch := range SplitPhonemes(ps, MaxPhonemes) {
		part, err := e.synthesizeBatch(ctx, batch, v, speed, onWait)
		if err != nil {
			return nil, err
		}
		pcm = append(pcm, part...)
	}
	return pcm, nil
}

// synthesizeBatch is one model call over at most MaxPhonemes vocab symbols.
func (e *Engine) synthesizeBatch(ctx context.Context, batch string, v *Voice, speed float32, onWait func()) ([]int16, error) {
	ids := e.vocab.Encode(batch)
	return e.infer(ctx, ids, v.Style(len(ids)), speed, onWait)
}

// acquire takes the model permit, calling onWait first when someone else holds it.
func (e *Engine) acquire(ctx context.Context, onWait func()) error {
	select {
	case e.permit <- struct{}{}:
		return nil
	default:
	}
	if onWait != nil {
		onWait()
	}
	e.waiting.Add(1)
	defer e.waiting.Add(-1)
	select {
	case e.permit <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (e *Engine) release() { <-e.permit }

// Hold takes the model permit as a forward pass does and keeps it until release is called:
// for a caller that must have the model to itself across calls, and for tests of waiting.
// Waiting honours ctx and counts in QueueDepth.
func (e *Engine) Hold(ctx context.Context) (release func(), err error) {
	if err := e.acquire(ctx, nil); err != nil {
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(e.release) }, nil
}

// infer is one forward pass: [pad, ids..., pad], the style row, the speed. The waveform is
// converted to PCM16 straight from the output tensor (no float32 copy of it is kept).
func (e *Engine) infer(ctx context.Context, ids []int64, style []float32, speed float32, onWait func()) ([]int16, error) {
	if err := e.acquire(ctx, onWait); err != nil {
		return nil, err
	}
	defer e.release()
	if e.closed.Load() {
		return nil, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	inputs := make([]ort.Value, len(e.session.Inputs))
	defer func() {
		for _, v := range inputs {
			if v != nil {
				v.Destroy()
			}
		}
	}()
	for i, in := range e.session.Inputs {
		var err error
		switch in.Name {
		case e.tokenInput:
			inputs[i], err = tokenTensor(ids, e.tokenType)
		case "style":
			inputs[i], err = ort.NewTensor(ort.NewShape(1, StyleDim), append([]float32(nil), style...))
		case "speed":
			if e.speedType == ort.TensorElementDataTypeInt32 {
				inputs[i], err = ort.NewTensor(ort.NewShape(1), []int32{int32(math.Round(float64(speed)))})
			} else {
				inputs[i], err = ort.NewTensor(ort.NewShape(1), []float32{speed})
			}
		}
		if err != nil {
			return nil, fmt.Errorf("kokoro input %s: %w", in.Name, err)
		}
	}
	run, err := ort.NewRunOptions()
	if err != nil {
		return nil, fmt.Errorf("kokoro run options: %w", err)
	}
	defer run.Destroy()
	// A cancelled context stops the pass mid-way (ORT's terminate flag), not after it.
	terminated := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(terminated)
		run.Terminate()
	})
	outputs := []ort.Value{nil}
	err = e.session.RunWithOptions(inputs, outputs, run)
	if !stop() {
		<-terminated
	}
	if outputs[0] != nil {
		defer outputs[0].Destroy()
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, fmt.Errorf("kokoro forward pass: %w", err)
	}
	t, ok := outputs[0].(*ort.Tensor[float32])
	if !ok {
		return nil, fmt.Errorf("%w: output is %T, want a float32 tensor", ErrModelIO, outputs[0])
	}
	return audio.Float32ToInt16(t.GetData()), nil
}

func tokenTensor(ids []int64, dtype ort.TensorElementDataType) (ort.Value, error) {
	n := int64(len(ids) + 2)
	if dtype == ort.TensorElementDataTypeInt32 {
		data := make([]int32, 0, n)
		data = append(data, PadID)
		for _, id := range ids {
			data = append(data, int32(id))
		}
		return ort.NewTensor(ort.NewShape(1, n), append(data, PadID))
	}
	data := make([]int64, 0, n)
	data = append(data, PadID)
	data = append(data, ids...)
	return ort.NewTensor(ort.NewShape(1, n), append(data, PadID))
}

// Close waits for the pass in flight and releases the session. Later calls fail with ErrClosed.
func (e *Engine) Close() error {
	if e.closed.Swap(true) {
		return nil
	}
	e.permit <- struct{}{}
	defer e.release()
	if e.session != nil {
		return e.session.Destroy()
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// residentBytes reads VmRSS from /proc/self/status; 0 when unavailable.
func residentBytes() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0
			}
			return kb * 1024
		}
	}
	return 0
}
