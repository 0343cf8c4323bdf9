package wire

import (
	"encoding/json"
	"reflect"
	"testing"
)

// The whole session.update each real client sends (issue 23): no field of theirs refuses the
// update. LiveKit Agents' OpenAI plugin 1.9.0 (realtime_model.js createSessionUpdateEvent, GA and
// its Azure beta shape) and the Agents SDK 0.20.0 (openaiRealtimeBase.js _getMergedSessionConfig,
// with parallel_tool_calls, reasoning, prompt, turn_detection's model_version and a function tool).
func TestRealClientsFullSessionUpdates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		dialect Dialect
		json    string
		ignored []string
		check   func(t *testing.T, s Session)
	}{
		{"livekit GA", GA, `{"type":"session.update","session":{"type":"realtime","model":"gpt-realtime","output_modalities":["audio"],
			"audio":{"input":{"format":{"type":"audio/pcm","rate":24000},"transcription":{"model":"gpt-4o-mini-transcribe"},
			"turn_detection":{"type":"semantic_vad","eagerness":"medium","create_response":true,"interrupt_response":true}},
			"output":{"format":{"type":"audio/pcm","rate":24000},"speed":1,"voice":"marin"}},
			"max_output_tokens":"inf","tool_choice":"auto","instructions":"Be kind.","reasoning":{"effort":"low"}}}`,
			[]string{"session.reasoning"}, func(t *testing.T, s Session) {
				if s.Instructions != "Be kind." || s.Voice != "marin" || s.TurnDetection.Type != TurnSemanticVAD {
					t.Errorf("%+v", s)
				}
			}},
		{"livekit azure beta", Beta, `{"type":"session.update","session":{"model":"gpt-4o-realtime-preview","voice":"alloy","input_audio_format":"pcm16",
			"output_audio_format":"pcm16","modalities":["text","audio"],"turn_detection":{"type":"server_vad","threshold":0.5,"prefix_padding_ms":300,
			"silence_duration_ms":200,"create_response":true},"input_audio_transcription":{"model":"whisper-1"},"tool_choice":"auto",
			"max_response_output_tokens":"inf","speed":1,"instructions":"Hi."}}`,
			nil, func(t *testing.T, s Session) {
				if s.TurnDetection.SilenceDurationMs != 200 || s.MaxOutputTokens != 0 {
					t.Errorf("%+v", s)
				}
			}},
		{"agents sdk", GA, `{"type":"session.update","session":{"type":"realtime","instructions":"Help.","model":"gpt-realtime",
			"output_modalities":["audio"],"audio":{"input":{"format":{"type":"audio/pcm","rate":24000},"noise_reduction":null,
			"transcription":{"model":"gpt-4o-mini-transcribe"},"turn_detection":{"type":"semantic_vad","create_response":true,
			"eagerness":"auto","interrupt_response":true,"model_version":"default"}},"output":{"format":{"type":"audio/pcm","rate":24000},
			"voice":"ash","speed":1}},"tool_choice":"auto","parallel_tool_calls":false,"reasoning":{"effort":"minimal"},
			"prompt":{"id":"pmpt_1","version":"2","variables":{"city":"Paris"}},"truncation":{"type":"retention_ratio","retention_ratio":0.5},
			"tools":[{"type":"function","name":"weather","description":"w","parameters":{"type":"object","properties":{}},"strict":false}]}}`,
			[]string{"session.prompt", "session.reasoning"}, func(t *testing.T, s Session) {
				if s.ParallelToolCalls || len(s.Tools) != 1 || s.Truncation.Type != TruncationRetentionRatio || s.Truncation.RetentionRatio != 0.5 {
					t.Errorf("%+v", s)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := Decode([]byte(tt.json), tt.dialect)
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			u := ev.(*SessionUpdate)
			if !reflect.DeepEqual(u.Session.Ignored, tt.ignored) {
				t.Errorf("ignored %v, want %v", u.Session.Ignored, tt.ignored)
			}
			s := NewSession("sess_1", "m")
			if err := s.Apply(u); err != nil {
				t.Fatal(err)
			}
			tt.check(t, s)
		})
	}
}

func TestTruncationDecodeAndEcho(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want Truncation
		echo string
	}{
		{`"auto"`, Truncation{}, `"auto"`},
		{`"disabled"`, Truncation{Type: TruncationDisabled}, `"disabled"`},
		{`{"type":"retention_ratio","retention_ratio":0.8,"token_limits":{"post_instructions":5000}}`,
			Truncation{Type: TruncationRetentionRatio, RetentionRatio: 0.8, PostInstructions: 5000},
			`{"type":"retention_ratio","retention_ratio":0.8,"token_limits":{"post_instructions":5000}}`},
	}
	for _, tt := range tests {
		ev, err := Decode([]byte(`{"type":"session.update","session":{"type":"realtime","truncation":`+tt.in+`}}`), GA)
		if err != nil {
			t.Fatalf("%s: %v", tt.in, err)
		}
		s := NewSession("s", "m")
		if err := s.Apply(ev.(*SessionUpdate)); err != nil {
			t.Fatal(err)
		}
		if s.Truncation != tt.want {
			t.Errorf("%s: %+v", tt.in, s.Truncation)
		}
		b, _ := json.Marshal(s.wire(GA).(gaSessionJSON).Truncation)
		if string(b) != tt.echo {
			t.Errorf("%s echoed %s", tt.in, b)
		}
	}
	for _, bad := range []string{`"sometimes"`, `{"type":"retention_ratio"}`, `{"type":"retention_ratio","retention_ratio":1.5}`, `{"type":"retention_ratio","retention_ratio":0.5,"token_limits":{"post_instructions":0}}`, `3`} {
		if _, err := Decode([]byte(`{"type":"session.update","session":{"type":"realtime","truncation":`+bad+`}}`), GA); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// response.create's parallel_tool_calls overrides the session's; reasoning is accepted (not
// applied); metadata is kept for the response.
func TestResponseParamsSurface(t *testing.T) {
	t.Parallel()
	ev, err := Decode([]byte(`{"type":"response.create","response":{"parallel_tool_calls":false,"reasoning":{"effort":"low"},
		"metadata":{"client_event_id":"response_create_1"},"max_output_tokens":5,"temperature":0.7}}`), GA)
	if err != nil {
		t.Fatal(err)
	}
	p := ev.(*ResponseCreate).Response
	if p.Metadata["client_event_id"] != "response_create_1" {
		t.Errorf("metadata %v", p.Metadata)
	}
	cfg := NewSession("s", "m").ForResponse(p)
	if cfg.ParallelToolCalls || cfg.MaxOutputTokens != 5 || cfg.Temperature != 0.7 {
		t.Errorf("%+v", cfg)
	}
}

func TestImagePartChecked(t *testing.T) {
	t.Parallel()
	item := func(url, detail string) string {
		return `{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":"input_image","image_url":"` + url + `","detail":"` + detail + `"}]}}`
	}
	for _, ok := range []string{item("data:image/png;base64,iVBORw0KGgo=", "low"), item("data:image/png;base64,AAAA", "auto"), item("data:image/jpeg;base64,/9j/", "")} {
		if _, err := Decode([]byte(ok), GA); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{item("file:///etc/passwd", ""), item("data:text/plain;base64,aGk=", ""), item("data:image/png,raw", ""), item("data:image/png;base64,AAAA", "ultra"), item("https://example.com/cat.jpg", ""), item("data:image/gif;base64,R0lG", "")} {
		if _, err := Decode([]byte(bad), GA); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
