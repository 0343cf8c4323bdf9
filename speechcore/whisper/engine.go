package whisper

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/speechcore/runtime"
)

// Options configure an Engine. The zero value means the documented defaults.
type Options struct {
	// QueueDepth bounds the requests waiting for the model (default 64). Transcribe blocks while
	// the queue is full: a caller that sends faster than the model decodes is slowed, never dropped.
	QueueDepth int
	// OwnerDepth bounds the finals one owner (Request.Owner: a conversation) may have queued
	// (default 2); its next waits for room, so one owner's backlog never fills QueueDepth.
	OwnerDepth int
	// ModelID names the model in ready frames and health (default: the directory's base name).
	ModelID string
	// SkipWarmup skips the warm-up pass (tests of Load's refusals only).
	SkipWarmup bool
	// Language is the language a request without one is decoded in (default DefaultLanguage,
	// "en"); LanguageAuto detects every final's language. Load refuses one the model lacks.
	Language string
	// Decoders is how many transcriptions run at once (default 1): each has an owner goroutine
	// and its own encoder and decoder sessions (the model's memory once per decoder), all
	// serving the one queue. A burst of finals (many conversations ending turns together)
	// drains Decoders at a time.
	Decoders int
}

// DefaultQueueDepth is Options.QueueDepth's default.
const DefaultQueueDepth = 64

// Result is one decoded window.
type Result struct {
	Text   string
	Tokens []int         // generated ids, prompt and end-of-text excluded
	Decode time.Duration // wall time from the owner picking the request up to the last token
	// Wait is the time the request spent queued: from its submission (a final's wait for room
	// included) to the owner picking it up. Kind is the request's (Request.Kind).
	Wait time.Duration
	Kind Kind
	// InModel is the part of Decode spent inside ONNX Runtime (encoder and decoder runs); Decode
	// minus InModel is the engine's own overhead (mel, feeds, argmax, detokenisation).
	InModel time.Duration
	// Encode is the part of InModel spent in the encoder pass (the rest is the decoder steps).
	Encode time.Duration
	// Features is the part of Decode spent in the log-mel front end.
	Features time.Duration
	// Steps counts decoder calls (the detection pass included).
	Steps int
	// Language is the code of the language decoded in (the prompt's token): the one asked, the
	// default, or the detected one (Detected). An English-only checkpoint reports "en".
	Language string
	Detected bool
	// Detect is the part of Decode spent detecting the language (one decoder pass).
	Detect time.Duration
	// Segments are the timed segments (Request.Timestamps), in seconds from the window's start.
	Segments []Segment
	// Logprobs are the text tokens' log-probabilities (Request.Logprobs).
	Logprobs []TokenLogprob
	// Values counts the ONNX Runtime values the decoder steps created (the loop's input tensors
	// and the outputs ONNX Runtime handed back); CopiedBytes counts the tensor bytes copied
	// between ONNX Runtime's buffers and Go memory on the way (the bench's "fewer copies").
	Values      int
	CopiedBytes int64
}

// Stats are the engine's load figures and its queue now.
type Stats struct {
	ModelID            string
	LoadMs             float64
	WarmupMs           float64
	ResidentDeltaBytes int64 // VmRSS after load and warm-up minus before
	QueueDepth         int   // requests waiting plus those running
	Decodes            int64
	// Partials answered without a full decode: replaced while queued by their owner's newer
	// partial (Superseded), dropped while queued by their owner's final (Stale), ended
	// mid-decode by a final (Preempted).
	PartialsSuperseded, PartialsStale, PartialsPreempted int64
}

// Engine is Whisper on ONNX Runtime: an owner goroutine per decoder (Options.Decoders) holds
// its encoder and decoder sessions and serves requests from one bounded queue, one forward pass
// at a time each: finals first, fairly between owners, then partials, the newest per owner only
// (queue.go).
type Engine struct {
	modelID  string
	language string   // Options.Language, checked
	model    *model   // models[0]: its configuration answers NumMels, languages, translate
	models   []*model // one per decoder, each owned by its owner goroutine after Load returns

	queue   *schedule
	quit    chan struct{} // closed by Close
	done    chan struct{} // closed when the owner has exited and destroyed the sessions
	closing sync.Once
	decodes atomic.Int64

	loadMs, warmupMs float64
	residentDelta    int64
}

type job struct {
	ctx   context.Context
	pcm   []float32
	mel   []float32 // precomputed features (TranscribeMel); pcm is nil then
	opts  decodeOpts
	reply chan jobResult // buffered: the owner never waits for the caller

	kind   Kind
	queued time.Time               // when submit first pushed it (Result.Wait)
	cancel context.CancelCauseFunc // a partial's, set by pop: a final preempts it
	id     uint64                  // a partial's key in schedule.running
}

type jobResult struct {
	res Result
	err error
}

// Load reads the model directory (config.json, generation_config.json, tokenizer.json,
// encoder_model.onnx, decoder_model_merged.onnx), opens both sessions on env, runs a warm-up pass
// and starts the owner goroutine.
func Load(ctx context.Context, env *runtime.Env, dir string, opts Options) (*Engine, error) {
	if opts.QueueDepth < 0 {
		return nil, fmt.Errorf("whisper: queue depth must be >= 0, got %d", opts.QueueDepth)
	}
	if opts.QueueDepth == 0 {
		opts.QueueDepth = DefaultQueueDepth
	}
	if opts.OwnerDepth < 0 {
		return nil, fmt.Errorf("whisper: owner depth must be >= 0, got %d", opts.OwnerDepth)
	}
	if opts.OwnerDepth == 0 {
		opts.OwnerDepth = DefaultOwnerDepth
	}
	if opts.Decoders < 0 {
		return nil, fmt.Errorf("whisper: decoders must be >= 0, got %d", opts.Decoders)
	}
	if opts.Decoders == 0 {
		opts.Decoders = 1
	}
	if opts.ModelID == "" {
		opts.ModelID = filepath.Base(filepath.Clean(dir))
	}
	rssBefore := residentBytes()
	start := time.Now()
	models := make([]*model, 0, opts.Decoders)
	destroy := func() {
		for _, m := range models {
			m.destroy()
		}
	}
	for range opts.Decoders {
		m, err := openModel(env, dir)
		if err != nil {
			destroy()
			return nil, err
		}
		models = append(models, m)
	}
	m := models[0]
	lang, err := ParseLanguage(opts.Language)
	if err == nil && lang == "" {
		lang = DefaultLanguage
	}
	if err == nil && lang != LanguageAuto {
		err = m.dec.serves(lang, opts.ModelID)
	}
	if err != nil {
		destroy()
		return nil, fmt.Errorf("whisper default language: %w", err)
	}
	e := &Engine{
		modelID:  opts.ModelID,
		language: lang,
		model:    m,
		models:   models,
		queue:    newSchedule(opts.QueueDepth, opts.OwnerDepth, opts.Decoders),
		quit:     make(chan struct{}),
		done:     make(chan struct{}),
		loadMs:   ms(time.Since(start)),
	}
	if !opts.SkipWarmup {
		warm := time.Now()
		// One second of silence through the whole path: the first pass is several times slower
		// than every later one, and no caller should pay for it.
		for _, m := range models {
			if _, err := m.transcribe(ctx, make([]float32, audio.WhisperSampleRate), nil, e.decodeOpts(Request{Language: DefaultLanguage})); err != nil {
				destroy()
				return nil, fmt.Errorf("whisper warm-up: %w", err)
			}
		}
		e.warmupMs = ms(time.Since(warm))
	}
	e.residentDelta = residentBytes() - rssBefore
	var owners sync.WaitGroup
	for _, m := range models {
		owners.Go(func() { e.own(m) })
	}
	go func() {
		owners.Wait()
		close(e.done)
	}()
	return e, nil
}

// Transcribe decodes at most 30 s of 16 kHz mono audio as a final of its own. It waits for room
// in the queue and for the owner; ctx cancels the wait and the decode (between decoder steps).
func (e *Engine) Transcribe(ctx context.Context, pcm16k []float32) (Result, error) {
	return e.TranscribeAs(ctx, pcm16k, Request{})
}

// TranscribeAs is Transcribe for req's owner and kind: finals are served first, fairly between
// owners; a partial waits behind every final and is replaced (ErrSuperseded) by its owner's
// next partial or final while it waits, and is ended (ErrPreempted) by any final queued while it
// is decoded.
func (e *Engine) TranscribeAs(ctx context.Context, pcm16k []float32, req Request) (Result, error) {
	if len(pcm16k) > audio.WhisperSamples {
		return Result{}, fmt.Errorf("%w: %d samples (at most %d)", ErrAudioTooLong, len(pcm16k), audio.WhisperSamples)
	}
	opts, err := e.resolve(req)
	if err != nil {
		return Result{}, err
	}
	return e.submit(req, job{ctx: ctx, pcm: pcm16k, opts: opts, reply: make(chan jobResult, 1), kind: req.Kind})
}

// NumMels is the number of mel bands the model takes (80, or 128 for large-v3): the size of the
// audio.MelStream a caller of TranscribeMel keeps.
func (e *Engine) NumMels() int { return e.model.nMels }

// TranscribeMel decodes one window from precomputed log-mel features, [NumMels()*3000] mel-major as
// audio.LogMel or an audio.MelStream returns them (a streaming partial keeps the mel of its open
// segment and computes only the new frames). The owner reads mel while it decodes: the caller must
// not change it until TranscribeMel returns. Otherwise as Transcribe.
func (e *Engine) TranscribeMel(ctx context.Context, mel []float32) (Result, error) {
	return e.TranscribeMelAs(ctx, mel, Request{})
}

// TranscribeMelAs is TranscribeMel for req's owner and kind, scheduled as TranscribeAs.
func (e *Engine) TranscribeMelAs(ctx context.Context, mel []float32, req Request) (Result, error) {
	if want := e.model.nMels * audio.WhisperFrames; len(mel) != want {
		return Result{}, fmt.Errorf("%w: %d values, want %d", ErrMelShape, len(mel), want)
	}
	opts, err := e.resolve(req)
	if err != nil {
		return Result{}, err
	}
	return e.submit(req, job{ctx: ctx, mel: mel, opts: opts, reply: make(chan jobResult, 1), kind: req.Kind})
}

// resolve checks a request's language and says how to decode it.
func (e *Engine) resolve(req Request) (decodeOpts, error) {
	lang, err := e.CheckLanguage(req.Language)
	if err != nil {
		return decodeOpts{}, err
	}
	if req.Translate {
		if err := e.CheckTranslate(); err != nil {
			return decodeOpts{}, err
		}
	}
	req.Language = lang
	return e.decodeOpts(req), nil
}

// CheckTranslate refuses, with ErrTranslateNotServed, translation on a checkpoint without the
// <|translate|> task: an English-only one (no language or task tokens).
func (e *Engine) CheckTranslate() error {
	if e.model.dec.englishOnly || e.model.dec.translate < 0 {
		return fmt.Errorf("%w: %s is an English-only checkpoint (no <|translate|> task token); it transcribes English only", ErrTranslateNotServed, e.modelID)
	}
	return nil
}

// decodeOpts turns a checked request into the decode: "auto" detects on finals of a model that
// can, and is the default language otherwise (partials, English-only checkpoints).
func (e *Engine) decodeOpts(req Request) decodeOpts {
	o := decodeOpts{language: req.Language, timestamps: req.Timestamps && e.model.dec.timestampBegin >= 0, logprobs: req.Logprobs, translate: req.Translate}
	if o.language == LanguageAuto {
		o.language = e.language
		if o.language == LanguageAuto {
			o.language = DefaultLanguage
		}
		o.detect = req.Kind == Final && e.CanDetect()
	}
	if e.model.dec.englishOnly {
		o.language = "en"
	}
	return o
}

// submit queues j for the owner and waits for its answer.
func (e *Engine) submit(req Request, j job) (Result, error) {
	ctx := j.ctx
	select {
	case <-e.quit:
		return Result{}, ErrClosed
	default:
	}
	j.queued = time.Now()
	if err := e.queue.push(ctx, req, j, e.quit); err != nil {
		return Result{}, err
	}
	select {
	case r := <-j.reply:
		return r.res, r.err
	case <-ctx.Done():
		return Result{}, ctx.Err()
	case <-e.done:
		select {
		case r := <-j.reply:
			return r.res, r.err
		default:
			return Result{}, ErrClosed
		}
	}
}

// own is an owner goroutine: the only one that touches m's sessions after Load.
func (e *Engine) own(m *model) {
	defer m.destroy()
	e.queue.work(e.quit, func(ctx context.Context, j job) (Result, error) {
		e.decodes.Add(1)
		return m.transcribe(ctx, j.pcm, j.mel, j.opts)
	})
}

// Stats reports the load figures and the queue now.
func (e *Engine) Stats() Stats {
	return Stats{
		ModelID:            e.modelID,
		LoadMs:             e.loadMs,
		WarmupMs:           e.warmupMs,
		ResidentDeltaBytes: e.residentDelta,
		QueueDepth:         e.queue.inFlight(),
		Decodes:            e.decodes.Load(),
		PartialsSuperseded: e.queue.superseded.Load(),
		PartialsStale:      e.queue.stale.Load(),
		PartialsPreempted:  e.queue.preempted.Load(),
	}
}

// ModelID names the model (the directory's base name unless Options.ModelID said otherwise).
func (e *Engine) ModelID() string { return e.modelID }

// Close stops the owner, refuses what is still queued with ErrClosed, and destroys every
// session and tensor. It waits for a decode in flight to finish its current step.
func (e *Engine) Close() error {
	e.closing.Do(func() { close(e.quit) })
	<-e.done
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// residentBytes reads VmRSS from /proc/self/status; 0 where there is none.
func residentBytes() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Bytes()
		if rest, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
			f := bytes.Fields(rest)
			if len(f) == 0 {
				return 0
			}
			kb, err := strconv.ParseInt(string(f[0]), 10, 64)
			if err != nil {
				return 0
			}
			return kb * 1024
		}
	}
	return 0
}
