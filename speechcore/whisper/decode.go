package whisper

import (
	"math"
	"time"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/speechcore/runtime"
)

// Segment is one timed stretch of a window's transcript, from Whisper's timestamp tokens: Start
// and End in seconds from the window's first sample (20 ms resolution).
type Segment struct {
	Start, End float64
	Text       string
	Tokens     []int // text ids only
	// AvgLogprob is the mean log-probability of the segment's tokens (its timestamps included,
	// as openai's avg_logprob counts every sampled token); 0 when logprobs were not computed.
	AvgLogprob float64
}

// TokenLogprob is one generated text token and the log-probability the decoder gave it, after
// the suppression and timestamp rules (the distribution greedy decoding picked from).
type TokenLogprob struct {
	Token   string // the token's text (its bytes as UTF-8, invalid sequences replaced)
	Bytes   []byte
	Logprob float64
}

// decodeOpts is one request's decoding, resolved from its Request by the engine.
type decodeOpts struct {
	language   string // a served code (the prompt's language token), or the default
	detect     bool   // detect the language first (one decoder pass over <|startoftranscript|>)
	timestamps bool
	logprobs   bool  // compute each token's log-probability (Logprobs, Segment.AvgLogprob)
	translate  bool  // the <|translate|> task
	prompt     []int // built from language and timestamps after detection
}

// maxInitialTimestamp is openai's max_initial_timestamp: the first timestamp is at most 1 s.
const maxInitialTimestamp = 1.0

// timestampStep is the time between two timestamp tokens.
const timestampStep = 0.02

// pickRules says which ids a step may pick besides the suppression lists.
type pickRules struct {
	timestamps bool // openai's ApplyTimestampRules; otherwise every timestamp id is masked
	logprob    bool // also return the picked id's log-probability
}

// pick is greedy's argmax over the row with the suppressed ids masked, the begin-suppress ids at
// the first generated position, and either every timestamp id masked or openai's timestamp rules
// (decoding.py ApplyTimestampRules): timestamps in pairs, never decreasing, the first one within
// maxInitialTimestamp, and a timestamp forced when their summed probability beats every text
// token. sampled is what was generated so far. The log-probability is that of the picked id in
// the masked distribution (0 unless rules.logprob).
//
// The rules leave at most three allowed id ranges (text, specials, timestamps), each walked
// against one precomputed mask: no per-id closure, no per-step allocation (issue 26: at
// whisper-small's V = 51865 the per-id rule checks cost more than a GPU decoder step's tenth).
func (m *model) pick(row []float32, sampled []int, rules pickRules) (int, float32) {
	tsBegin, eot := m.dec.timestampBegin, m.dec.eot
	if tsBegin < 0 || tsBegin > len(row) {
		tsBegin = len(row)
		rules.timestamps = false
	}
	atBegin := len(sampled) == 0
	textOK, nonTimestampOK, timestampOK := true, true, rules.timestamps
	tsFloor, tsCeil := tsBegin, len(row)
	if rules.timestamps {
		n := len(sampled)
		last := n >= 1 && sampled[n-1] >= tsBegin
		penultimate := n < 2 || sampled[n-2] >= tsBegin
		if last {
			if penultimate {
				timestampOK = false
			} else {
				textOK = false
			}
		}
		for i := n - 1; i >= 0; i-- {
			if sampled[i] >= tsBegin {
				tsFloor = sampled[i]
				if !last || penultimate {
					tsFloor++
				}
				break
			}
		}
		if atBegin {
			nonTimestampOK = false
			tsCeil = min(tsCeil, tsBegin+int(math.Round(maxInitialTimestamp/timestampStep))+1)
		}
	}
	mask := m.suppressed
	if atBegin {
		mask = m.beginMask
	}
	textEnd := min(max(eot, 0), tsBegin)
	// skip is the one special id the timestamp rules mask besides the lists (<|notimestamps|>).
	skip := -1
	if rules.timestamps {
		skip = m.dec.noTimestamps
	}
	var sp spans
	add := func(from, to int) {
		if from < to {
			sp.r[sp.n] = [2]int{from, to}
			sp.n++
		}
	}
	build := func() {
		sp.n = 0
		if nonTimestampOK {
			if textOK {
				add(0, textEnd)
			}
			add(textEnd, tsBegin)
		}
		if timestampOK {
			add(max(tsFloor, tsBegin), tsCeil)
		}
	}
	build()
	if rules.timestamps && timestampOK && nonTimestampOK {
		// Force a timestamp when their total probability beats the best other token.
		var ts, text spans
		for i := 0; i < sp.n; i++ {
			if sp.r[i][0] >= tsBegin {
				ts.r[ts.n] = sp.r[i]
				ts.n++
			} else {
				text.r[text.n] = sp.r[i]
				text.n++
			}
		}
		lse, any := ts.logSumExp(row, mask, skip)
		_, best := text.argmax(row, mask, skip)
		if best < 0 {
			best = float32(math.Inf(-1))
		}
		if any && lse > float64(best) {
			nonTimestampOK = false
			build()
		}
	}
	best, bestScore := sp.argmax(row, mask, skip)
	if best < 0 {
		return eot, 0 // every id masked: end the window
	}
	if !rules.logprob {
		return best, 0
	}
	lse, _ := sp.logSumExp(row, mask, skip)
	return best, float32(float64(bestScore) - lse)
}

// spans are up to three increasing, disjoint id ranges [from, to) of a row.
type spans struct {
	n int
	r [3][2]int
}

// allowed: an id in the spans is allowed unless the mask sets it or it is skip.
func allowedID(id int, mask []bool, skip int) bool {
	return !(id < len(mask) && mask[id]) && id != skip
}

// argmax returns the allowed id with the highest score, the first one on ties (-1 when none; a
// NaN first allowed score is kept as greedy's original scan kept it).
func (sp *spans) argmax(row []float32, mask []bool, skip int) (int, float32) {
	best, bestScore := -1, float32(math.Inf(-1))
	for i := 0; i < sp.n; i++ {
		for id := sp.r[i][0]; id < sp.r[i][1]; id++ {
			s := row[id]
			if best >= 0 && !(s > bestScore) {
				continue
			}
			if allowedID(id, mask, skip) {
				best, bestScore = id, s
			}
		}
	}
	return best, bestScore
}

// logSumExp is log Σ exp(row[id]) over the allowed ids, summed in id order.
func (sp *spans) logSumExp(row []float32, mask []bool, skip int) (float64, bool) {
	top := math.Inf(-1)
	for i := 0; i < sp.n; i++ {
		for id := sp.r[i][0]; id < sp.r[i][1]; id++ {
			if f := float64(row[id]); f > top && allowedID(id, mask, skip) {
				top = f
			}
		}
	}
	if math.IsInf(top, -1) {
		return top, false
	}
	var sum float64
	for i := 0; i < sp.n; i++ {
		for id := sp.r[i][0]; id < sp.r[i][1]; id++ {
			if allowedID(id, mask, skip) {
				sum += math.Exp(float64(row[id]) - top)
			}
		}
	}
	return top + math.Log(sum), true
}

// detect runs the decoder once over <|startoftranscript|> and picks the language token with the
// highest score among those the tokenizer has (openai's detect_language). Its caches are its own
// and released before it returns.
func (m *model) detect(r *runner, enc runtime.Value) (string, time.Duration, error) {
	st := m.newKV()
	defer m.closeKV(st)
	row, dur, err := m.step(r, enc, st, []int{m.dec.sot}, 0, true)
	if err != nil {
		return "", dur, err
	}
	lang := m.dec.languages[0]
	best := float32(math.Inf(-1))
	for i, id := range m.dec.langIDs {
		if id < len(row) && row[id] > best {
			best, lang = row[id], m.dec.languages[i]
		}
	}
	return lang, dur, nil
}

// finish fills the result from the generated ids: text, text tokens, segments (timestamps) and
// each text token's log-probability.
func (m *model) finish(res *Result, generated []int, logprobs []float32, opts decodeOpts, samples int) {
	eot := m.dec.eot
	res.Text = m.tok.Decode(generated)
	res.Tokens = generated
	if opts.timestamps {
		res.Tokens = nil
		for _, id := range generated {
			if id < eot {
				res.Tokens = append(res.Tokens, id)
			}
		}
		res.Segments = m.segments(generated, logprobs, float64(samples)/audio.WhisperSampleRate)
	}
	if opts.logprobs {
		for i, id := range generated {
			if id >= eot || i >= len(logprobs) {
				continue
			}
			b := m.tok.DecodeBytes([]int{id})
			res.Logprobs = append(res.Logprobs, TokenLogprob{Token: string(toValidUTF8(append([]byte(nil), b...))), Bytes: b, Logprob: float64(logprobs[i])})
		}
	}
}

// segments cuts the generated ids at their timestamp pairs: <|start|> text <|end|>. A segment
// left open at the window's end ends at the audio's end; text before any timestamp, or a pair
// with no text, makes no segment.
func (m *model) segments(generated []int, logprobs []float32, duration float64) []Segment {
	tsBegin, eot := m.dec.timestampBegin, m.dec.eot
	var out []Segment
	open := -1.0
	var text []int
	var lpSum float64
	var lpN int
	emit := func(end float64) {
		if open >= 0 && len(text) > 0 {
			seg := Segment{Start: open, End: max(end, open), Text: m.tok.Decode(text), Tokens: text}
			if lpN > 0 {
				seg.AvgLogprob = lpSum / float64(lpN)
			}
			out = append(out, seg)
		}
		text, lpSum, lpN = nil, 0, 0
	}
	for i, id := range generated {
		if i < len(logprobs) {
			lpSum += float64(logprobs[i])
			lpN++
		}
		switch {
		case id >= tsBegin:
			t := float64(id-tsBegin) * timestampStep
			if open < 0 {
				open, text = t, nil
				continue
			}
			emit(t)
			open = -1
		case id < eot:
			text = append(text, id)
		}
	}
	if open >= 0 {
		emit(duration)
	}
	return out
}
