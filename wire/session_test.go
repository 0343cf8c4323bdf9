package wire

import (
	"errors"
	"reflect"
	"testing"
)

func mustUpdate(t *testing.T, js string, d Dialect) *SessionUpdate {
	t.Helper()
	ev, err := Decode([]byte(js), d)
	if err != nil {
		t.Fatalf("Decode(%s): %v", js, err)
	}
	return ev.(*SessionUpdate)
}

func TestSessionApply(t *testing.T) {
	t.Parallel()
	base := NewSession("sess_1", "gpt-realtime")
	base.Instructions = "Be kind."
	base.Transcription = &Transcription{Model: "whisper-1"}
	base.Tools = []Tool{{Type: "function", Name: "f"}}

	tests := []struct {
		name   string
		d      Dialect
		update string
		want   func(s *Session)
	}{
		{"absent fields stay", Beta, `{"type":"session.update","session":{"voice":"ash"}}`,
			func(s *Session) { s.Voice = "ash" }},
		{"turn_detection null turns detection off", Beta, `{"type":"session.update","session":{"turn_detection":null}}`,
			func(s *Session) { s.TurnDetection = TurnDetection{} }},
		{"instructions empty string clears", Beta, `{"type":"session.update","session":{"instructions":""}}`,
			func(s *Session) { s.Instructions = "" }},
		{"instructions null clears", GA, `{"type":"session.update","session":{"type":"realtime","instructions":null}}`,
			func(s *Session) { s.Instructions = "" }},
		{"transcription null turns it off", GA, `{"type":"session.update","session":{"type":"realtime","audio":{"input":{"transcription":null}}}}`,
			func(s *Session) { s.Transcription = nil }},
		{"tools [] clears", GA, `{"type":"session.update","session":{"tools":[]}}`,
			func(s *Session) { s.Tools = []Tool{} }},
		{"semantic_vad and G.711 in, text only", GA, `{"type":"session.update","session":{"type":"realtime","output_modalities":["text"],
			"audio":{"input":{"format":{"type":"audio/pcmu"},"turn_detection":{"type":"semantic_vad","eagerness":"high"}}}}}`,
			func(s *Session) {
				s.TextOnly, s.InputFormat = true, G711Ulaw
				s.TurnDetection = DefaultTurnDetection(TurnSemanticVAD)
				s.TurnDetection.Eagerness = EagernessHigh
			}},
		{"realtime-api-beta connect", Beta, `{"type":"session.update","session":{"modalities":["text","audio"],"instructions":"","voice":"verse",
			"input_audio_format":"pcm16","output_audio_format":"pcm16","input_audio_transcription":null,"turn_detection":null,
			"tools":[],"tool_choice":"auto","temperature":0.8,"max_response_output_tokens":4096}}`,
			func(s *Session) {
				s.Instructions, s.Voice, s.Transcription, s.TurnDetection, s.Tools = "", "verse", nil, TurnDetection{}, []Tool{}
				s.MaxOutputTokens = 4096
			}},
		{"function tool_choice naming a tool", GA, `{"type":"session.update","session":{"tool_choice":{"type":"function","name":"f"}}}`,
			func(s *Session) { s.ToolChoice = ToolChoice{ToolChoiceFunction, "f"} }},
		{"model is not switchable", GA, `{"type":"session.update","session":{"type":"realtime","model":"other"}}`,
			func(s *Session) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := base
			s.Tools = append([]Tool(nil), base.Tools...)
			want := s
			tt.want(&want)
			if err := s.Apply(mustUpdate(t, tt.update, tt.d)); err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if !reflect.DeepEqual(s, want) {
				t.Errorf("\n got %+v\nwant %+v", s, want)
			}
		})
	}
}

func TestSessionApplyRefusesWhole(t *testing.T) {
	t.Parallel()
	s := NewSession("sess_1", "m")
	before := s
	tests := []struct {
		name, update, param string
	}{
		{"tool_choice names a missing function", `{"type":"session.update","event_id":"e1","session":{"voice":"ash","tool_choice":{"type":"function","name":"nope"}}}`, "session.tool_choice"},
		{"type change", `{"type":"session.update","event_id":"e1","session":{"type":"transcription","instructions":"x"}}`, "session.type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Apply(mustUpdate(t, tt.update, GA))
			var we *Error
			if !errors.As(err, &we) || we.Code != CodeInvalidValue || we.Param != tt.param || we.EventID != "e1" {
				t.Fatalf("error %v, want invalid_value %s", err, tt.param)
			}
			if !reflect.DeepEqual(s, before) {
				t.Errorf("a refused update changed the session: %+v", s)
			}
		})
	}
}

func TestForResponse(t *testing.T) {
	t.Parallel()
	s := NewSession("sess_1", "m")
	s.Instructions = "session"
	ev, err := Decode([]byte(`{"type":"response.create","response":{"instructions":"once","modalities":["text"],"voice":"echo"}}`), Beta)
	if err != nil {
		t.Fatal(err)
	}
	r := s.ForResponse(ev.(*ResponseCreate).Response)
	if r.Instructions != "once" || !r.TextOnly || r.Voice != "echo" {
		t.Errorf("%+v", r)
	}
	if s.Instructions != "session" || s.TextOnly || s.Voice != DefaultVoice {
		t.Errorf("ForResponse changed the session: %+v", s)
	}
	resp := NewResponse("resp_1", "conv_1", r)
	if !resp.TextOnly || resp.Voice != "echo" || resp.Status != ResponseInProgress {
		t.Errorf("%+v", resp)
	}
}

// The HTTP ephemeral-key bodies carry bare session objects.
func TestDecodeSession(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		d    Dialect
		raw  string
		want func(s *Session)
		code string
	}{
		{"beta POST /v1/realtime/sessions", Beta, `{"model":"gpt-4o-realtime-preview","voice":"verse","modalities":["audio","text"],"instructions":"Hi.",
			"turn_detection":null,"client_secret":{"expires_after":{"anchor":"created_at","seconds":60}}}`,
			func(s *Session) { s.Voice, s.Instructions, s.TurnDetection = "verse", "Hi.", TurnDetection{} }, ""},
		{"GA client_secrets session", GA, `{"type":"realtime","model":"gpt-realtime","instructions":"You are a friendly assistant.",
			"audio":{"output":{"voice":"marin"}}}`,
			func(s *Session) { s.Voice, s.Instructions = "marin", "You are a friendly assistant." }, ""},
		{"not an object", GA, `"x"`, nil, CodeInvalidType},
		{"unknown field", Beta, `{"volume":3}`, nil, CodeUnknownParameter},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := DecodeSession([]byte(tt.raw), tt.d)
			if tt.code != "" {
				var we *Error
				if !errors.As(err, &we) || we.Code != tt.code || u != nil {
					t.Fatalf("got %v, %v; want %s", u, err, tt.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s := NewSession("sess_1", "m")
			want := s
			tt.want(&want)
			if err := s.Apply(u); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(s, want) {
				t.Errorf("\n got %+v\nwant %+v", s, want)
			}
		})
	}
}
