package whisper

import (
	"math"
	"time"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/voiced/voiced/audio"
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
func (m *model) pick(row []float32, sampled []int, rules pickRules) (int, float32) {
	tsBegin, eot := m.dec.timestampBegin, m.dec.eot
	if tsBegin < 0 {
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
	allowed := func(id int) bool {
		switch {
		case id < len(m.suppressed) && m.suppressed[id]:
			return false
		case atBegin && id < len(m.beginSet) && m.beginSet[id]:
			return false
		case id >= tsBegin:
			return timestampOK && id >= tsFloor && id < tsCeil
		case !nonTimestampOK:
			return false
		case id < eot:
			return textOK
		case rules.timestamps && id == m.dec.noTimestamps:
			return false
		}
		return true
	}
	if rules.timestamps && timestampOK && nonTimestampOK {
		// Force a timestamp when their total probability beats the best other token.
		lse, any := logSumExp(row, tsFloor, tsCeil, allowed)
		best := float32(math.Inf(-1))
		for id := 0; id < tsBegin; id++ {
			if allowed(id) && row[id] > best {
				best = row[id]
			}
		}
		if any && lse > float64(best) {
			nonTimestampOK = false
		}
	}
	best, bestScore := -1, float32(math.Inf(-1))
	for id, s := range row {
		if !allowed(id) {
			continue
		}
		if best < 0 || s > bestScore {
			best, bestScore = id, s
		}
	}
	if best < 0 {
		return eot, 0 // every id masked: end the window
	}
	if !rules.logprob {
		return best, 0
	}
	lse, _ := logSumExp(row, 0, len(row), allowed)
	return best, float32(float64(bestScore) - lse)
}

// logSumExp is log Σ exp(row[id]) over the allowed ids in [from, to).
func logSumExp(row []float32, from, to int, allowed func(int) bool) (float64, bool) {
	top := math.Inf(-1)
	for id := from; id < to; id++ {
		if allowed(id) && float64(row[id]) > top {
			top = float64(row[id])
		}
	}
	if math.IsInf(top, -1) {
		return top, false
	}
	var sum float64
	for id := from; id < to; id++ {
		if allowed(id) {
			sum += math.Exp(float64(row[id]) - top)
		}
	}
	return top + math.Log(sum), true
}

// detect runs the decoder once over <|startoftranscript|> and picks the language token with the
// highest score among those the tokenizer has (openai's detect_language). Its caches are its own
// and destroyed before it returns.
func (m *model) detect(run runFunc, enc ort.Value) (string, time.Duration, error) {
	past := make([]ort.Value, m.layers*4)
	owned := make([]ort.Value, m.layers*4)
	defer func() {
		for _, v := range owned {
			if v != nil {
				v.Destroy()
			}
		}
	}()
	lang := m.dec.languages[0]
	choose := func(row []float32) int {
		best := float32(math.Inf(-1))
		for i, id := range m.dec.langIDs {
			if id < len(row) && row[id] > best {
				best, lang = row[id], m.dec.languages[i]
			}
		}
		return 0
	}
	_, dur, err := m.step(run, enc, past, owned, []int{m.dec.sot}, 0, true, choose)
	return lang, dur, err
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
