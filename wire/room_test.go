package wire

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestVoicedRoomFields(t *testing.T) {
	t.Parallel()
	for _, d := range []Dialect{Beta, GA} {
		u, err := DecodeSession([]byte(`{"voiced":{"echo_cancellation":false,"interruption":{"min_words":2}}}`), d)
		if err != nil {
			t.Fatal(err)
		}
		s := NewSession("sess_1", "m")
		if err := s.Apply(u); err != nil {
			t.Fatal(err)
		}
		if s.EchoCancellation == nil || *s.EchoCancellation || s.Interruption == nil ||
			*s.Interruption != (Interruption{MinDurationMs: DefaultInterruptionMs, MinWords: 2}) {
			t.Fatalf("%v: applied %v %+v", d, s.EchoCancellation, s.Interruption)
		}
		b, _ := json.Marshal(s.wire(d))
		if !strings.Contains(string(b), `"voiced":{"echo_cancellation":false,"interruption":{"min_duration_ms":400,"min_words":2}}`) {
			t.Errorf("%v: session object %s does not echo the voiced fields", d, b)
		}
		// null returns each to its default, and the member leaves the session object.
		u, err = DecodeSession([]byte(`{"voiced":{"echo_cancellation":null,"interruption":null}}`), d)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Apply(u); err != nil {
			t.Fatal(err)
		}
		b, _ = json.Marshal(s.wire(d))
		if s.EchoCancellation != nil || s.Interruption != nil || strings.Contains(string(b), `"voiced"`) {
			t.Errorf("%v: null left %v %v; %s", d, s.EchoCancellation, s.Interruption, b)
		}
	}
	for raw, code := range map[string]string{
		`{"voiced":{"interruption":{"min_duration_ms":9000}}}`: CodeInvalidValue,
		`{"voiced":{"interruption":{"min_words":-1}}}`:         CodeInvalidValue,
		`{"voiced":{"interruption":{"words":1}}}`:              CodeUnknownParameter,
		`{"voiced":{"echo_cancellation":"yes"}}`:               CodeInvalidType,
		`{"voiced":{"loud":true}}`:                             CodeUnknownParameter,
	} {
		_, err := DecodeSession([]byte(raw), GA)
		var we *Error
		if !errors.As(err, &we) || we.Code != code {
			t.Errorf("%s: %v, want %s", raw, err, code)
		}
	}
}
