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
	// The sessions run through ONNX Runtime I/O bindings (issue 26 item 4): the encoder's output
	// and the decoder's presents are bound to cache memory (the provider's device; host memory on
	// the CPU provider) and fed back as inputs where they lie; logits are bound to host memory.
	encBind, decBind *runtime.Binding
	host, cache      *runtime.Memory
	encoderOutput    string
	inputNames       []string // the decoder's declared inputs
	presentNames     []string // per presentSlot
	nMels            int
	mel              *audio.Mel // the front end and its buffer, reused request after request
	melBuf           []float32

	layers, heads, headDim int
	vocab                  int

	// decoderFeed[i] says what the decoder's i-th declared input is.
	decoderFeed []feedKind
	pastSlot    []kvSlot // per declared input, for feedPast
	// outputs requested from the decoder: logits first, then the presents in declared order.
	presentSlot []kvSlot // per requested output after logits

	// Constant tensors, created at load and destroyed with the model.
	emptyPast *ort.Tensor[float32] // [1, H, 0, hd]
	cacheOff  *ort.Tensor[bool]    // [false]
	cacheOn   *ort.Tensor[bool]    // [true]
	oneID     *ort.Tensor[int64]   // [1, 1]: a step's one new id, rewritten and bound again each step
	onePos    *ort.Tensor[int64]   // [1]: its cache_position
	// Their ONNX Runtime values, borrowed once for binding.
	emptyPastIn, cacheOffIn, cacheOnIn, oneIDIn, onePosIn runtime.Input
	suppressed                                            []bool // per id: masked at every step (timestamps by the pick's mode)
	beginSet                                              []bool // per id: masked at the first generated position
	beginMask                                             []bool // suppressed or beginSet: the first position's mask

	counts stepCounts // this request's decoder steps (reset by transcribe)
}

// stepCounts are Result.Values and Result.CopiedBytes.
type stepCounts struct {
	values int
	copied int64
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
	if err := m.bind(env); err != nil {
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
	m.encoderOutput = m.encoder.Outputs[0].Name
	return nil
}

// planDecoder maps every declared decoder input to what feeds it and picks the outputs to read.
func (m *model) planDecoder(ins, outs []ort.InputOutputInfo) ([]string, error) {
	seen := make([]bool, m.layers*4)
	m.decoderFeed = make([]feedKind, len(ins))
	m.pastSlot = make([]kvSlot, len(ins))
	m.inputNames = make([]string, len(ins))
	for i, in := range ins {
		m.inputNames[i] = in.Name
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
		m.presentNames = append(m.presentNames, o.Name)
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
	if m.oneID, err = ort.NewTensor(ort.NewShape(1, 1), []int64{0}); err != nil {
		return fmt.Errorf("whisper: input_ids tensor: %w", err)
	}
	if m.onePos, err = ort.NewTensor(ort.NewShape(1), []int64{0}); err != nil {
		return fmt.Errorf("whisper: cache_position tensor: %w", err)
	}
	m.emptyPastIn, m.cacheOffIn, m.cacheOnIn = runtime.InputOf(m.emptyPast), runtime.InputOf(m.cacheOff), runtime.InputOf(m.cacheOn)
	m.oneIDIn, m.onePosIn = runtime.InputOf(m.oneID), runtime.InputOf(m.onePos)
	return m.makeMasks()
}

// makeMasks builds the per-id suppression masks pick reads.
func (m *model) makeMasks() error {
	m.suppressed = make([]bool, m.vocab)
	for _, id := range m.dec.suppress {
		m.suppressed[id] = true
	}
	m.beginSet = make([]bool, m.vocab)
	for _, id := range m.dec.beginSuppress {
		m.beginSet[id] = true
	}
	m.beginMask = make([]bool, m.vocab)
	for id := range m.beginMask {
		m.beginMask[id] = m.suppressed[id] || m.beginSet[id]
	}
	return nil
}

// bind creates the sessions' I/O bindings and the memories they allocate outputs in.
func (m *model) bind(env *runtime.Env) error {
	var err error
	if m.host, err = env.HostMemory(); err != nil {
		return fmt.Errorf("whisper: %w", err)
	}
	if m.cache, err = env.CacheMemory(); err != nil {
		return fmt.Errorf("whisper: %w", err)
	}
	if m.encBind, err = m.encoder.NewBinding(); err != nil {
		return fmt.Errorf("whisper encoder: %w", err)
	}
	if m.decBind, err = m.decoder.NewBinding(); err != nil {
		return fmt.Errorf("whisper decoder: %w", err)
	}
	return nil
}

func (m *model) destroy() {
	for _, b := range []*runtime.Binding{m.encBind, m.decBind} {
		if b != nil {
			b.Destroy()
		}
	}
	m.encBind, m.decBind = nil, nil
	m.host.Release()
	m.cache.Release()
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
	for _, t := range []*ort.Tensor[int64]{m.oneID, m.onePos} {
		if t != nil {
			t.Destroy()
		}
	}
	m.oneID, m.onePos = nil, nil
	m.encoder, m.decoder, m.emptyPast, m.cacheOff, m.cacheOn = nil, nil, nil, nil, nil
}

// transcribe runs one window: log-mel, encoder, then the greedy loop over the merged decoder.
// With mel non-nil (TranscribeMel) the features are the caller's and pcm is not read.
func (m *model) transcribe(ctx context.Context, pcm, mel []float32, opts decodeOpts) (res Result, err error) {
	start := time.Now()
	m.counts = stepCounts{}
	defer func() { res.Values, res.CopiedBytes = m.counts.values, m.counts.copied }()
	if mel == nil {
		m.melBuf = m.mel.Compute(m.melBuf, pcm)
		mel = m.melBuf
	}
	res.Features = time.Since(start)
	r, stop, err := m.runner(ctx)
	if err != nil {
		return res, err
	}
	defer stop()
	feat, err := ort.NewTensor(ort.NewShape(1, int64(m.nMels), audio.WhisperFrames), mel)
	if err != nil {
		return res, fmt.Errorf("whisper: features tensor: %w", err)
	}
	defer feat.Destroy()
	var enc [1]runtime.Value
	t0 := time.Now()
	err = m.encBind.BindInput(m.encoderInput, runtime.InputOf(feat))
	if err == nil {
		m.encBind.ClearOutputs()
		err = m.encBind.BindOutput(m.encoderOutput, m.cache)
	}
	if err == nil {
		err = r.run(m.encBind, enc[:])
	}
	m.encBind.Clear() // the binding keeps no reference to the features or the output
	res.Encode = time.Since(t0)
	res.InModel += res.Encode
	if err != nil {
		return res, fmt.Errorf("whisper encoder: %w", err)
	}
	defer enc[0].Release()

	res.Language = opts.language
	if opts.detect {
		t1 := time.Now()
		lang, dur, err := m.detect(r, enc[0])
		res.Detect = time.Since(t1)
		res.InModel += dur
		res.Steps++
		if err != nil {
			return res, fmt.Errorf("whisper language detection: %w", err)
		}
		res.Language, res.Detected = lang, true
	}
	opts.prompt = m.dec.promptFor(res.Language, opts.timestamps, opts.translate)
	tokens, logprobs, steps, inModel, err := m.greedy(r, enc[0], opts)
	res.InModel += inModel
	res.Steps += steps
	if err != nil {
		return res, err
	}
	m.finish(&res, tokens, logprobs, opts, len(pcm))
	res.Decode = time.Since(start)
	return res, nil
}

// runner runs the bindings for one request: its RunOptions are terminated when ctx ends, so a
// long encoder pass stops too, not only the loop between steps.
type runner struct {
	ctx context.Context
	ro  *ort.RunOptions
}

func (r *runner) run(b *runtime.Binding, out []runtime.Value) error {
	if err := r.ctx.Err(); err != nil {
		return err
	}
	if err := b.Run(r.ro, out); err != nil {
		if r.ctx.Err() != nil {
			return r.ctx.Err()
		}
		return err
	}
	return nil
}

func (m *model) runner(ctx context.Context) (*runner, func(), error) {
	ro, err := ort.NewRunOptions()
	if err != nil {
		return nil, nil, fmt.Errorf("whisper: run options: %w", err)
	}
	terminated := make(chan struct{})
	stopAfter := context.AfterFunc(ctx, func() {
		ro.Terminate()
		close(terminated)
	})
	stop := func() {
		// AfterFunc may be running Terminate: wait for it before destroying the options.
		if !stopAfter() {
			<-terminated
		}
		ro.Destroy()
	}
	return &runner{ctx: ctx, ro: ro}, stop, nil
}

// kvState is one decode's cache: ONNX Runtime's own present values from the last steps, bound as
// the next step's pasts where they lie (never copied), and what the binding holds now.
type kvState struct {
	past    []runtime.Value // by kvSlot.index(); nil = empty
	bound   []runtime.Input // per decoder input: the value bound now (rebinding only what changed)
	logits  runtime.Value   // the last step's, read in place until the next step
	outputs []runtime.Value // scratch: this step's bound outputs
	outSlot []int           // scratch: which presentSlot each output after logits is
}

func (m *model) newKV() *kvState {
	return &kvState{
		past:    make([]runtime.Value, m.layers*4),
		bound:   make([]runtime.Input, len(m.decoderFeed)),
		outputs: make([]runtime.Value, 1+len(m.presentSlot)),
		outSlot: make([]int, 0, len(m.presentSlot)),
	}
}

// close releases the cache and the logits and clears the binding's references to them.
func (m *model) closeKV(st *kvState) {
	m.decBind.Clear()
	for i := range st.past {
		st.past[i].Release()
	}
	st.logits.Release()
}

// greedy is the decoding loop of docs/models.md §1.5 and §1.8. Every declared input is fed on
// every call; step 0 feeds empty pasts and keeps the cross-attention presents; later steps feed
// the last token, the growing self-attention cache and the kept cross cache, and do not ask for
// the empty encoder presents the cache branch returns.
func (m *model) greedy(r *runner, enc runtime.Value, opts decodeOpts) (generated []int, logprobs []float32, steps int, inModel time.Duration, err error) {
	st := m.newKV()
	defer m.closeKV(st)
	tokens := append([]int(nil), opts.prompt...)
	promptLen := len(tokens)
	rules := pickRules{timestamps: opts.timestamps, logprob: opts.logprobs}
	for len(tokens) < m.dec.maxLength {
		if err := r.ctx.Err(); err != nil {
			return nil, nil, steps, inModel, err
		}
		first := steps == 0
		newIDs := tokens[len(tokens)-1:]
		if first {
			newIDs = tokens
		}
		row, dur, err := m.step(r, enc, st, newIDs, len(tokens)-len(newIDs), first)
		inModel += dur
		steps++
		if err != nil {
			return nil, nil, steps, inModel, fmt.Errorf("whisper decoder step %d: %w", steps, err)
		}
		next, lp := m.pick(row, tokens[promptLen:], rules)
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

// step runs one decoder call and returns the last logits row, a view on ONNX Runtime's output
// valid until the next step or closeKV.
func (m *model) step(r *runner, enc runtime.Value, st *kvState, newIDs []int, pastLen int, first bool) ([]float32, time.Duration, error) {
	st.logits.Release()
	var err error
	ids, pos := m.oneIDIn, m.onePosIn
	if len(newIDs) == 1 {
		m.oneID.GetData()[0] = int64(newIDs[0])
		m.onePos.GetData()[0] = int64(pastLen)
	} else {
		idData := make([]int64, len(newIDs))
		posData := make([]int64, len(newIDs))
		for i, id := range newIDs {
			idData[i], posData[i] = int64(id), int64(pastLen+i)
		}
		idsT, err := ort.NewTensor(ort.NewShape(1, int64(len(idData))), idData)
		if err != nil {
			return nil, 0, err
		}
		defer idsT.Destroy()
		posT, err := ort.NewTensor(ort.NewShape(int64(len(posData))), posData)
		if err != nil {
			return nil, 0, err
		}
		defer posT.Destroy()
		ids, pos = runtime.InputOf(idsT), runtime.InputOf(posT)
		m.counts.values += 2
	}
	for i, kind := range m.decoderFeed {
		var v runtime.Input
		switch kind {
		case feedInputIDs:
			v = ids
		case feedCachePosition:
			v = pos
		case feedEncoderHidden:
			v = enc.Input()
		case feedUseCache:
			v = m.cacheOnIn
			if first {
				v = m.cacheOffIn
			}
		case feedPast:
			v = m.emptyPastIn
			if p := st.past[m.pastSlot[i].index()]; !p.IsNil() {
				v = p.Input()
			}
		}
		// The ids and position tensors are rewritten in place: bind them again every step (a
		// device provider copies host inputs at bind time).
		if v == st.bound[i] && kind != feedInputIDs && kind != feedCachePosition {
			continue
		}
		if err := m.decBind.BindInput(m.inputNames[i], v); err != nil {
			st.bound[i] = runtime.Input{}
			return nil, 0, err
		}
		st.bound[i] = v
	}
	m.decBind.ClearOutputs()
	if err := m.decBind.BindOutput(outLogits, m.host); err != nil {
		return nil, 0, err
	}
	st.outSlot = st.outSlot[:0]
	for j, slot := range m.presentSlot {
		if slot.cross && !first {
			continue // the cache branch's encoder presents are empty: keep step 0's
		}
		if err := m.decBind.BindOutput(m.presentNames[j], m.cache); err != nil {
			return nil, 0, err
		}
		st.outSlot = append(st.outSlot, j)
	}
	out := st.outputs[:1+len(st.outSlot)]
	t0 := time.Now()
	err = r.run(m.decBind, out)
	dur := time.Since(t0)
	if err != nil {
		return nil, dur, err
	}
	m.counts.values += len(out)
	st.logits = out[0]
	for i, j := range st.outSlot {
		k := m.presentSlot[j].index()
		st.past[k].Release()
		st.past[k] = out[1+i]
	}
	data, shape, err := st.logits.Float32s()
	if err != nil {
		return nil, dur, fmt.Errorf("%w: logits: %v", ErrUnsupportedIO, err)
	}
	if len(shape) != 3 || shape[1] != int64(len(newIDs)) || shape[2] <= 0 {
		return nil, dur, fmt.Errorf("%w: logits shape %v for %d input ids", ErrUnsupportedIO, shape, len(newIDs))
	}
	v := int(shape[2])
	return data[(len(newIDs)-1)*v : len(newIDs)*v], dur, nil
}
