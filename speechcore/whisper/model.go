package whisper

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/speechcore/runtime"
)

// Optimum's merged-decoder I/O names (docs/models.md §1.4).
const (
	inInputIDs       = "input_ids"
	inEncoderHidden  = "encoder_hidden_states"
	inUseCacheBranch = "use_cache_branch"
	inCachePosition  = "cache_position"
	outLogits        = "logits"
)

var (
	pastName    = regexp.MustCompile(`^past_key_values\.(\d+)\.(decoder|encoder)\.(key|value)$`)
	presentName = regexp.MustCompile(`^present\.(\d+)\.(decoder|encoder)\.(key|value)$`)
)

// kvSlot says which cache tensor an input or output is: layer, self (decoder) or cross
// (encoder) attention, key or value.
type kvSlot struct {
	layer int
	cross bool
	value bool
}

func (k kvSlot) index() int {
	i := k.layer * 4
	if k.cross {
		i += 2
	}
	if k.value {
		i++
	}
	return i
}

// model holds the two sessions and everything resolved at load. Only the owner goroutine uses
// it after Load.
type model struct {
	tok *Tokenizer
	dec decoding
	cfg modelConfig

	encoder      *runtime.Session
	decoder      *runtime.Session
	encoderInput string
	nMels        int
	mel          *audio.Mel // the front end and its buffer, reused request after request
	melBuf       []float32

	layers, heads, headDim int
	vocab                  int

	// decoderFeed[i] says what the decoder's i-th declared input is.
	decoderFeed []feedKind
	pastSlot    []kvSlot // per declared input, for feedPast
	// outputs requested from the decoder: logits first, then the presents in declared order.
	presentSlot []kvSlot // per requested output after logits

	// Constant tensors, created at load and destroyed with the model.
	emptyPast  *ort.Tensor[float32] // [1, H, 0, hd]
	cacheOff   *ort.Tensor[bool]    // [false]
	cacheOn    *ort.Tensor[bool]    // [true]
	suppressed []bool               // per id: masked at every step (timestamps by the pick's mode)
	beginSet   []bool               // per id: masked at the first generated position
}

type feedKind int

const (
	feedInputIDs feedKind = iota
	feedEncoderHidden
	feedPast
	feedUseCache
	feedCachePosition
)

// openModel reads the model files and opens the sessions, checking every declared input and
// output against what the loop feeds and reads.
func openModel(env *runtime.Env, dir string) (*model, error) {
	cfg, tok, dec, err := loadModelFiles(dir)
	if err != nil {
		return nil, fmt.Errorf("load whisper from %s: %w", dir, err)
	}
	m := &model{tok: tok, dec: dec, cfg: cfg, nMels: cfg.NumMelBins, vocab: cfg.VocabSize, layers: cfg.DecoderLayers, heads: cfg.DecoderHeads, headDim: cfg.DModel / cfg.DecoderHeads}
	ok := false
	defer func() {
		if !ok {
			m.destroy()
		}
	}()
	m.mel = audio.NewMel(cfg.NumMelBins)

	m.encoder, err = env.NewSession(filepath.Join(dir, FileEncoder), nil)
	if err != nil {
		return nil, fmt.Errorf("load whisper encoder: %w", err)
	}
	if err := m.checkEncoder(); err != nil {
		return nil, err
	}
	decPath := filepath.Join(dir, FileDecoderMerged)
	ins, outs, err := env.Inspect(decPath)
	if err != nil {
		return nil, fmt.Errorf("load whisper decoder: %w", err)
	}
	wanted, err := m.planDecoder(ins, outs)
	if err != nil {
		return nil, fmt.Errorf("load whisper decoder %s: %w", decPath, err)
	}
	m.decoder, err = env.NewSession(decPath, wanted)
	if err != nil {
		return nil, fmt.Errorf("load whisper decoder: %w", err)
	}
	if err := m.makeConstants(); err != nil {
		return nil, err
	}
	ok = true
	return m, nil
}

func (m *model) checkEncoder() error {
	if len(m.encoder.Inputs) != 1 {
		return fmt.Errorf("%w: %s declares %d inputs, want one (input_features)", ErrUnsupportedIO, FileEncoder, len(m.encoder.Inputs))
	}
	in := m.encoder.Inputs[0]
	if in.DataType != ort.TensorElementDataTypeFloat {
		return fmt.Errorf("%w: %s input %s is %s; only float32 I/O is fed (use the fp32 or _quantized export)", ErrUnsupportedIO, FileEncoder, in.Name, in.DataType)
	}
	if d := in.Dimensions; len(d) != 3 || (d[1] > 0 && int(d[1]) != m.nMels) {
		return fmt.Errorf("%w: %s input %s has shape %v, want [batch, %d, 3000] (config.json num_mel_bins)", ErrConfig, FileEncoder, in.Name, d, m.nMels)
	}
	m.encoderInput = in.Name
	if len(m.encoder.Outputs) == 0 || m.encoder.Outputs[0].DataType != ort.TensorElementDataTypeFloat {
		return fmt.Errorf("%w: %s must output float32 last_hidden_state", ErrUnsupportedIO, FileEncoder)
	}
	return nil
}

// planDecoder maps every declared decoder input to what feeds it and picks the outputs to read.
func (m *model) planDecoder(ins, outs []ort.InputOutputInfo) ([]string, error) {
	seen := make([]bool, m.layers*4)
	m.decoderFeed = make([]feedKind, len(ins))
	m.pastSlot = make([]kvSlot, len(ins))
	for i, in := range ins {
		if in.DataType == ort.TensorElementDataTypeFloat16 {
			return nil, fmt.Errorf("%w: input %s is float16; only float32 I/O is fed (use the fp32 or _quantized export)", ErrUnsupportedIO, in.Name)
		}
		switch {
		case in.Name == inInputIDs:
			if in.DataType != ort.TensorElementDataTypeInt64 {
				return nil, fmt.Errorf("%w: %s is %s, want int64", ErrUnsupportedIO, in.Name, in.DataType)
			}
			m.decoderFeed[i] = feedInputIDs
		case in.Name == inEncoderHidden:
			m.decoderFeed[i] = feedEncoderHidden
		case in.Name == inUseCacheBranch:
			if in.DataType != ort.TensorElementDataTypeBool {
				return nil, fmt.Errorf("%w: %s is %s, want bool", ErrUnsupportedIO, in.Name, in.DataType)
			}
			m.decoderFeed[i] = feedUseCache
		case in.Name == inCachePosition:
			if in.DataType != ort.TensorElementDataTypeInt64 {
				return nil, fmt.Errorf("%w: %s is %s, want int64", ErrUnsupportedIO, in.Name, in.DataType)
			}
			m.decoderFeed[i] = feedCachePosition
		default:
			slot, ok := parseSlot(pastName, in.Name)
			if !ok {
				return nil, fmt.Errorf("%w: unknown decoder input %q (not an Optimum merged decoder?)", ErrUnsupportedIO, in.Name)
			}
			if slot.layer >= m.layers {
				return nil, fmt.Errorf("%w: input %s names layer %d but config.json decoder_layers is %d", ErrConfig, in.Name, slot.layer, m.layers)
			}
			if d := in.Dimensions; len(d) != 4 || (d[1] > 0 && int(d[1]) != m.heads) || (d[3] > 0 && int(d[3]) != m.headDim) {
				return nil, fmt.Errorf("%w: input %s has shape %v, want [batch, %d, past, %d] (config.json heads and d_model)", ErrConfig, in.Name, d, m.heads, m.headDim)
			}
			m.decoderFeed[i] = feedPast
			m.pastSlot[i] = slot
			seen[slot.index()] = true
		}
	}
	for i, s := range seen {
		if !s {
			return nil, fmt.Errorf("%w: decoder lacks past_key_values input %d of %d layers (config.json decoder_layers)", ErrConfig, i, m.layers)
		}
	}
	if !hasFeed(m.decoderFeed, feedInputIDs) || !hasFeed(m.decoderFeed, feedEncoderHidden) || !hasFeed(m.decoderFeed, feedUseCache) {
		return nil, fmt.Errorf("%w: the merged decoder needs %s, %s and %s inputs", ErrUnsupportedIO, inInputIDs, inEncoderHidden, inUseCacheBranch)
	}
	wanted := []string{outLogits}
	var logits *ort.InputOutputInfo
	for i := range outs {
		o := outs[i]
		if o.Name == outLogits {
			logits = &outs[i]
			continue
		}
		slot, ok := parseSlot(presentName, o.Name)
		if !ok {
			continue // cross_attentions and other extras are not requested
		}
		if o.DataType != ort.TensorElementDataTypeFloat {
			return nil, fmt.Errorf("%w: output %s is %s; only float32 I/O is read", ErrUnsupportedIO, o.Name, o.DataType)
		}
		wanted = append(wanted, o.Name)
		m.presentSlot = append(m.presentSlot, slot)
	}
	if logits == nil || logits.DataType != ort.TensorElementDataTypeFloat {
		return nil, fmt.Errorf("%w: the decoder must output float32 %s", ErrUnsupportedIO, outLogits)
	}
	if len(m.presentSlot) != m.layers*4 {
		return nil, fmt.Errorf("%w: decoder outputs %d present tensors, want %d", ErrConfig, len(m.presentSlot), m.layers*4)
	}
	return wanted, nil
}

func hasFeed(f []feedKind, k feedKind) bool {
	for _, x := range f {
		if x == k {
			return true
		}
	}
	return false
}

func parseSlot(re *regexp.Regexp, name string) (kvSlot, bool) {
	g := re.FindStringSubmatch(name)
	if g == nil {
		return kvSlot{}, false
	}
	layer, err := strconv.Atoi(g[1])
	if err != nil {
		return kvSlot{}, false
	}
	return kvSlot{layer: layer, cross: g[2] == "encoder", value: g[3] == "value"}, true
}

func (m *model) makeConstants() error {
	var err error
	// Zero-size past: onnxruntime_go creates it with a nil data pointer, which ORT accepts.
	if m.emptyPast, err = ort.NewTensor(ort.NewShape(1, int64(m.heads), 0, int64(m.headDim)), []float32{}); err != nil {
		return fmt.Errorf("whisper: empty past tensor: %w", err)
	}
	if m.cacheOff, err = ort.NewTensor(ort.NewShape(1), []bool{false}); err != nil {
		return fmt.Errorf("whisper: use_cache_branch tensor: %w", err)
	}
	if m.cacheOn, err = ort.NewTensor(ort.NewShape(1), []bool{true}); err != nil {
		return fmt.Errorf("whisper: use_cache_branch tensor: %w", err)
	}
	m.suppressed = make([]bool, m.vocab)
	for _, id := range m.dec.suppress {
		m.suppressed[id] = true
	}
	m.beginSet = make([]bool, m.vocab)
	for _, id := range m.dec.beginSuppress {
		m.beginSet[id] = true
	}
	return nil
}

func (m *model) destroy() {
	for _, v := range []interface{ Destroy() error }{m.encoder, m.decoder} {
		if v != nil && v != (*runtime.Session)(nil) {
			v.Destroy()
		}
	}
	for _, t := range []*ort.Tensor[float32]{m.emptyPast} {
		if t != nil {
			t.Destroy()
		}
	}
	for _, t := range []*ort.Tensor[bool]{m.cacheOff, m.cacheOn} {
		if t != nil {
			t.Destroy()
		}
	}
	m.encoder, m.decoder, m.emptyPast, m.cacheOff, m.cacheOn = nil, nil, nil, nil, nil
}

// transcribe runs one window: log-mel, encoder, then the greedy loop over the merged decoder.
// With mel non-nil (TranscribeMel) the features are the caller's and pcm is not read.
func (m *model) transcribe(ctx context.Context, pcm, mel []float32, opts decodeOpts) (Result, error) {
	start := time.Now()
	var res Result
	if mel == nil {
		m.melBuf = m.mel.Compute(m.melBuf, pcm)
		mel = m.melBuf
	}
	res.Features = time.Since(start)
	run, stop, err := m.runner(ctx)
	if err != nil {
		return res, err
	}
	defer stop()
	feat, err := ort.NewTensor(ort.NewShape(1, int64(m.nMels), audio.WhisperFrames), mel)
	if err != nil {
		return res, fmt.Errorf("whisper: features tensor: %w", err)
	}
	defer feat.Destroy()
	encOut := []ort.Value{nil}
	t0 := time.Now()
	err = run(m.encoder, []ort.Value{feat}, encOut)
	res.Encode = time.Since(t0)
	res.InModel += res.Encode
	if err != nil {
		return res, fmt.Errorf("whisper encoder: %w", err)
	}
	enc := encOut[0]
	defer enc.Destroy()

	res.Language = opts.language
	if opts.detect {
		t1 := time.Now()
		lang, dur, err := m.detect(run, enc)
		res.Detect = time.Since(t1)
		res.InModel += dur
		res.Steps++
		if err != nil {
			return res, fmt.Errorf("whisper language detection: %w", err)
		}
		res.Language, res.Detected = lang, true
	}
	opts.prompt = m.dec.promptFor(res.Language, opts.timestamps, opts.translate)
	tokens, logprobs, steps, inModel, err := m.greedy(ctx, run, enc, opts)
	res.InModel += inModel
	res.Steps += steps
	if err != nil {
		return res, err
	}
	m.finish(&res, tokens, logprobs, opts, len(pcm))
	res.Decode = time.Since(start)
	return res, nil
}

type runFunc func(s *runtime.Session, in, out []ort.Value) error

// runner returns the session runner for one request: its RunOptions are terminated when ctx
// ends, so a long encoder pass stops too, not only the loop between steps.
func (m *model) runner(ctx context.Context) (runFunc, func(), error) {
	ro, err := ort.NewRunOptions()
	if err != nil {
		return nil, nil, fmt.Errorf("whisper: run options: %w", err)
	}
	terminated := make(chan struct{})
	stopAfter := context.AfterFunc(ctx, func() {
		ro.Terminate()
		close(terminated)
	})
	run := func(s *runtime.Session, in, out []ort.Value) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := s.RunWithOptions(in, out, ro); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		return nil
	}
	stop := func() {
		// AfterFunc may be running Terminate: wait for it before destroying the options.
		if !stopAfter() {
			<-terminated
		}
		ro.Destroy()
	}
	return run, stop, nil
}

// greedy is the decoding loop of docs/models.md §1.5 and §1.8. Every declared input is fed on
// every call; step 0 feeds empty pasts and keeps the cross-attention presents; later steps feed
// the last token, the growing self-attention cache and the kept cross cache, and ignore the
// empty encoder presents the cache branch returns.
func (m *model) greedy(ctx context.Context, run runFunc, enc ort.Value, opts decodeOpts) (generated []int, logprobs []float32, steps int, inModel time.Duration, err error) {
	past := make([]ort.Value, m.layers*4)  // indexed by kvSlot.index(); nil = empty
	owned := make([]ort.Value, m.layers*4) // the tensors this loop created and must destroy
	defer func() {
		for _, v := range owned {
			if v != nil {
				v.Destroy()
			}
		}
	}()
	tokens := append([]int(nil), opts.prompt...)
	promptLen := len(tokens)
	rules := pickRules{timestamps: opts.timestamps, logprob: opts.logprobs}
	for len(tokens) < m.dec.maxLength {
		if err := ctx.Err(); err != nil {
			return nil, nil, steps, inModel, err
		}
		first := steps == 0
		newIDs := tokens[len(tokens)-1:]
		if first {
			newIDs = tokens
		}
		pastLen := len(tokens) - len(newIDs)
		var lp float32
		choose := func(row []float32) int {
			var next int
			next, lp = m.pick(row, tokens[promptLen:], rules)
			return next
		}
		next, dur, err := m.step(run, enc, past, owned, newIDs, pastLen, first, choose)
		inModel += dur
		steps++
		if err != nil {
			return nil, nil, steps, inModel, fmt.Errorf("whisper decoder step %d: %w", steps, err)
		}
		if next == m.dec.eot {
			break
		}
		tokens = append(tokens, next)
		if opts.logprobs {
			logprobs = append(logprobs, lp)
		}
	}
	return tokens[promptLen:], logprobs, steps, inModel, nil
}

// step runs one decoder call and picks the next token from the last logits row with choose.
func (m *model) step(run runFunc, enc ort.Value, past, owned []ort.Value, newIDs []int, pastLen int, first bool, choose func(row []float32) int) (int, time.Duration, error) {
	ids := make([]int64, len(newIDs))
	for i, id := range newIDs {
		ids[i] = int64(id)
	}
	idsT, err := ort.NewTensor(ort.NewShape(1, int64(len(ids))), ids)
	if err != nil {
		return 0, 0, err
	}
	defer idsT.Destroy()
	var posT *ort.Tensor[int64]
	inputs := make([]ort.Value, len(m.decoderFeed))
	for i, kind := range m.decoderFeed {
		switch kind {
		case feedInputIDs:
			inputs[i] = idsT
		case feedEncoderHidden:
			inputs[i] = enc
		case feedUseCache:
			inputs[i] = m.cacheOn
			if first {
				inputs[i] = m.cacheOff
			}
		case feedCachePosition:
			if posT == nil {
				pos := make([]int64, len(ids))
				for j := range pos {
					pos[j] = int64(pastLen + j)
				}
				if posT, err = ort.NewTensor(ort.NewShape(int64(len(pos))), pos); err != nil {
					return 0, 0, err
				}
				defer posT.Destroy()
			}
			inputs[i] = posT
		case feedPast:
			v := past[m.pastSlot[i].index()]
			if v == nil {
				v = m.emptyPast
			}
			inputs[i] = v
		}
	}
	outputs := make([]ort.Value, 1+len(m.presentSlot))
	t0 := time.Now()
	err = run(m.decoder, inputs, outputs)
	dur := time.Since(t0)
	if err != nil {
		return 0, dur, err
	}
	logits := outputs[0]
	defer logits.Destroy()
	for i, slot := range m.presentSlot {
		out := outputs[1+i]
		k := slot.index()
		if slot.cross && !first {
			// The cache branch's encoder presents are empty constants: keep the step-0 ones.
			out.Destroy()
			continue
		}
		if owned[k] != nil {
			owned[k].Destroy()
		}
		owned[k] = out
		past[k] = out
	}
	lt, ok := logits.(*ort.Tensor[float32])
	if !ok {
		return 0, dur, fmt.Errorf("%w: logits are not float32", ErrUnsupportedIO)
	}
	shape := lt.GetShape()
	if len(shape) != 3 || shape[1] != int64(len(ids)) || shape[2] <= 0 {
		return 0, dur, fmt.Errorf("%w: logits shape %v for %d input ids", ErrUnsupportedIO, shape, len(ids))
	}
	v := int(shape[2])
	data := lt.GetData()
	row := data[(len(ids)-1)*v : len(ids)*v]
	return choose(row), dur, nil
}
