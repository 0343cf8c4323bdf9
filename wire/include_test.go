package wire

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

// include[] is applied (not ignored): the logprobs value is kept and echoed, another is refused
// by name, null clears it.
func TestSessionInclude(t *testing.T) {
	for name, tc := range map[string]struct {
		json   string
		want   []string
		errHas string
	}{
		"ga logprobs":   {`{"type":"session.update","session":{"type":"transcription","include":["item.input_audio_transcription.logprobs"]}}`, []string{IncludeLogprobs}, ""},
		"beta logprobs": {`{"type":"transcription_session.update","session":{"include":["item.input_audio_transcription.logprobs","item.input_audio_transcription.logprobs"]}}`, []string{IncludeLogprobs}, ""},
		"unknown":       {`{"type":"session.update","session":{"include":["message.output_text.logprobs"]}}`, nil, "include[0]"},
		"not an array":  {`{"type":"session.update","session":{"include":"item.input_audio_transcription.logprobs"}}`, nil, "include"},
	} {
		t.Run(name, func(t *testing.T) {
			dialect := GA
			if strings.HasPrefix(tc.json, `{"type":"transcription_session`) {
				dialect = Beta
			}
			ev, err := Decode([]byte(tc.json), dialect)
			if tc.errHas != "" {
				var e *Error
				if !errors.As(err, &e) || !strings.Contains(e.Param, tc.errHas) {
					t.Fatalf("err %v, want one naming %s", err, tc.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			u := ev.(*SessionUpdate)
			if slices.Contains(u.Session.Ignored, "include") {
				t.Fatalf("include ignored: %v", u.Session.Ignored)
			}
			s := Session{Type: SessionTranscription}
			if err := s.Apply(u); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(s.Include, tc.want) || !s.Includes(IncludeLogprobs) {
				t.Fatalf("include %v, want %v", s.Include, tc.want)
			}
			b, _ := json.Marshal(s.wire(dialect))
			if !strings.Contains(string(b), `"include":["item.input_audio_transcription.logprobs"]`) {
				t.Fatalf("not echoed: %s", b)
			}
		})
	}
}
