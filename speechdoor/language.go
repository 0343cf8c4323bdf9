package speechdoor

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/speechcore/whisper"
)

// The hearing doors' language, timestamps and logprobs (issues 20 and 21).

// Refusals of a request's language and timestamp options, by name.
var (
	ErrUnknownLanguage = door.NewRefusal(http.StatusBadRequest, "unknown_language",
		"language must be an ISO-639-1 code Whisper knows (en, es, fr, …) or auto")
	ErrLanguageNotServed = door.NewRefusal(http.StatusBadRequest, "language_not_served",
		"the mounted Whisper model cannot hear that language")
	ErrWordTimestamps = door.NewRefusal(http.StatusBadRequest, "word_timestamps_unsupported",
		"timestamp_granularities word is not served: the mounted Whisper export gives segment timestamps only (word times need its cross-attention weights, which the export does not output); ask for segment")
	ErrTimestampGranularity = door.NewRefusal(http.StatusBadRequest, "invalid_timestamp_granularity",
		"timestamp_granularities[] takes segment (word is not served)")
	ErrTranslateNotServed = door.NewRefusal(http.StatusBadRequest, "translation_not_served",
		"the mounted Whisper model cannot translate: an English-only checkpoint has no <|translate|> task")
	ErrBadBool = door.NewRefusal(http.StatusBadRequest, "invalid_parameter",
		"a boolean parameter takes true or false")
)

// languageRefusal maps Whisper's language errors to the refusals above (nil for other errors).
func languageRefusal(err error) *door.Refusal {
	switch {
	case errors.Is(err, whisper.ErrUnknownLanguage):
		return door.Refuse(ErrUnknownLanguage, err.Error())
	case errors.Is(err, whisper.ErrLanguageNotServed):
		return door.Refuse(ErrLanguageNotServed, err.Error())
	}
	return nil
}

// hearingOptions are what a client asked of the decode.
type hearingOptions struct {
	language   string // checked: a served code or whisper.LanguageAuto
	timestamps bool   // finals carry segments
	logprobs   bool   // finals carry each token's logprob
	translate  bool   // Whisper's <|translate|> task (/v1/audio/translations)
}

// task is verbose_json's task.
func task(translate bool) string {
	if translate {
		return "translate"
	}
	return "transcribe"
}

// request is the Whisper request for a final or a partial: "auto" detects on finals only, and a
// partial is decoded in the language the last final found (known, when not "").
func (h hearingOptions) request(final bool, known string) whisper.Request {
	req := whisper.Request{Language: h.language, Kind: whisper.Final, Translate: h.translate}
	if final {
		req.Timestamps, req.Logprobs = h.timestamps, h.logprobs
		return req
	}
	if h.language == whisper.LanguageAuto && known != "" {
		req.Language = known
	}
	return req
}

// languageChecker is what checks a client's language (*whisper.Engine).
type languageChecker interface {
	CheckLanguage(string) (string, error)
}

// hearingFromQuery reads ?language=, ?timestamps= and ?logprobs= of a socket door's handshake.
func hearingFromQuery(r *http.Request, engine languageChecker) (hearingOptions, *door.Refusal) {
	q := r.URL.Query()
	var h hearingOptions
	lang, err := engine.CheckLanguage(q.Get("language"))
	if err != nil {
		return h, languageRefusal(err)
	}
	h.language = lang
	for name, v := range map[string]*bool{"timestamps": &h.timestamps, "logprobs": &h.logprobs} {
		if s := q.Get(name); s != "" {
			b, err := strconv.ParseBool(s)
			if err != nil {
				return h, door.Refuse(ErrBadBool, name+" takes true or false")
			}
			*v = b
		}
	}
	return h, nil
}

// segmentJSON is a segment as the doors write it, OpenAI's verbose_json segment fields that
// Whisper's decode gives (times in seconds).
type segmentJSON struct {
	ID         int     `json:"id"`
	Start      float64 `json:"start"`
	End        float64 `json:"end"`
	Text       string  `json:"text"`
	Tokens     []int   `json:"tokens"`
	AvgLogprob float64 `json:"avg_logprob"`
}

// logprobJSON is OpenAI's transcription logprob: the token, its log-probability, its bytes.
type logprobJSON struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

func logprobsJSON(lps []whisper.TokenLogprob) []logprobJSON {
	out := make([]logprobJSON, 0, len(lps))
	for _, lp := range lps {
		b := make([]int, len(lp.Bytes))
		for i, c := range lp.Bytes {
			b[i] = int(c)
		}
		out = append(out, logprobJSON{Token: lp.Token, Logprob: lp.Logprob, Bytes: b})
	}
	return out
}

// segmentsJSON offsets a window's segments by its start (seconds) and numbers them from first.
func segmentsJSON(segs []whisper.Segment, offset float64, first int) []segmentJSON {
	out := make([]segmentJSON, 0, len(segs))
	for i, s := range segs {
		out = append(out, segmentJSON{
			ID: first + i, Start: round3(offset + s.Start), End: round3(offset + s.End),
			Text: " " + s.Text, Tokens: orEmpty(s.Tokens), AvgLogprob: s.AvgLogprob,
		})
	}
	return out
}

func round3(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }
