package speechdoor

import (
	"fmt"
	"strings"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/speechcore/whisper"
)

// POST /v1/audio/transcriptions: language, timestamp_granularities[] and include[] (issues 20, 21).

// maxListValues bounds the values one list field (timestamp_granularities[], include[]) keeps;
// the form's part count bounds them anyway.
const maxListValues = 4

// option keeps a form field the hearing options read.
func (u *upload) option(name, value string) {
	switch name {
	case "language":
		u.language = value
	case "timestamp_granularities[]", "timestamp_granularities":
		if len(u.granularities) < maxListValues {
			u.granularities = append(u.granularities, value)
		}
	case "include[]", "include":
		if len(u.include) < maxListValues {
			u.include = append(u.include, value)
		}
	}
}

// hearing checks the upload's options: the language against the mounted model, segment
// timestamps (word refused by name), include logprobs. verbose_json, srt and vtt decode with
// timestamps (one cue per segment).
func (u *upload) hearing(engine languageChecker) (hearingOptions, *door.Refusal) {
	var h hearingOptions
	lang, err := engine.CheckLanguage(u.language)
	if err != nil {
		return h, languageRefusal(err)
	}
	h.language = lang
	for _, g := range u.granularities {
		switch g {
		case "segment":
		case "word":
			return h, ErrWordTimestamps
		default:
			return h, door.Refuse(ErrTimestampGranularity, fmt.Sprintf("timestamp_granularities[] %q: use segment", clip(g)))
		}
	}
	for _, inc := range u.include {
		if inc != "logprobs" {
			return h, door.Refuse(ErrBadForm, fmt.Sprintf("include[] %q: only logprobs is served", clip(inc)))
		}
		h.logprobs = true
	}
	switch u.format {
	case "verbose_json", "srt", "vtt":
		h.timestamps = true
	}
	return h, nil
}

// windowSegments are one window's segments, numbered from first and offset by its start: its
// timestamp segments, or the whole window as one when it was decoded without timestamps.
func windowSegments(res whisper.Result, first, start, samples int) []verboseSegment {
	offset := seconds(start)
	if len(res.Segments) == 0 {
		return []verboseSegment{{
			ID: first, Seek: start / audio.WhisperHop, Start: offset, End: seconds(start + samples),
			Text: " " + strings.TrimSpace(res.Text), Tokens: orEmpty(res.Tokens),
		}}
	}
	out := make([]verboseSegment, 0, len(res.Segments))
	for i, s := range segmentsJSON(res.Segments, offset, first+0) {
		out = append(out, verboseSegment{
			ID: first + i, Seek: start / audio.WhisperHop, Start: s.Start, End: s.End,
			Text: s.Text, Tokens: s.Tokens, AvgLogprob: s.AvgLogprob,
		})
	}
	return out
}

// spokenLanguage is verbose_json's language, Whisper's English name: the one the first window
// with text was decoded in, else the one asked, else the server's default.
func spokenLanguage(heard string, h hearingOptions, engine interface{ DefaultLanguage() string }) string {
	code := heard
	if code == "" && h.language != whisper.LanguageAuto {
		code = h.language
	}
	if code == "" || code == whisper.LanguageAuto {
		code = engine.DefaultLanguage()
	}
	if code == whisper.LanguageAuto {
		code = whisper.DefaultLanguage
	}
	return whisper.LanguageName(code)
}

func logprobsOrNil(h hearingOptions, lps []logprobJSON) []logprobJSON {
	if !h.logprobs {
		return nil
	}
	if lps == nil {
		return []logprobJSON{}
	}
	return lps
}
