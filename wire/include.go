package wire

import (
	"encoding/json"
	"fmt"
	"slices"
)

// IncludeLogprobs is the session's include[] value that asks for the input transcription's token
// log-probabilities on conversation.item.input_audio_transcription.delta and .completed.
const IncludeLogprobs = "item.input_audio_transcription.logprobs"

// maxInclude bounds include[]: OpenAI defines one value.
const maxInclude = 8

// parseInclude reads the session's include: an array of the values OpenAI defines (only
// IncludeLogprobs), each at most once.
func parseInclude(raw json.RawMessage, param, id string) ([]string, *Error) {
	var list []json.RawMessage
	if rawKind(raw) != "an array" || json.Unmarshal(raw, &list) != nil {
		return nil, invalidType(param, "an array", raw, id)
	}
	if len(list) > maxInclude {
		return nil, ErrArrayTooLong(param, id, maxInclude, len(list))
	}
	out := make([]string, 0, len(list))
	for i, r := range list {
		p := fmt.Sprintf("%s[%d]", param, i)
		var v string
		if json.Unmarshal(r, &v) != nil {
			return nil, invalidType(p, "a string", r, id)
		}
		if err := oneOf(p, id, v, IncludeLogprobs); err != nil {
			return nil, err
		}
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out, nil
}

// Includes reports whether the session's include[] names v.
func (s *Session) Includes(v string) bool { return slices.Contains(s.Include, v) }

// includeWire is include as session.created/updated echo it: null when empty.
func includeWire(in []string) any {
	if len(in) == 0 {
		return nil
	}
	return slices.Clone(in)
}

// Logprob is one token of a transcript and the log-probability the decoder gave it (openai's
// LogProbProperties: {token, logprob, bytes}, bytes as an array of numbers).
type Logprob struct {
	Token   string
	Bytes   []byte
	Logprob float64
}

type logprobJSON struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

// logprobsWire renders logprobs for an event: null when the session did not include them.
func logprobsWire(lps []Logprob) any {
	if lps == nil {
		return nil
	}
	out := make([]logprobJSON, len(lps))
	for i, lp := range lps {
		b := make([]int, len(lp.Bytes))
		for j, c := range lp.Bytes {
			b[j] = int(c)
		}
		out[i] = logprobJSON{Token: lp.Token, Logprob: lp.Logprob, Bytes: b}
	}
	return out
}
