package wire

import (
	"bytes"
	"encoding/base64"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// Client events as real clients send them (docs/realtime-protocol.md §1.2, §7, §8).
func TestDecodeClientEvents(t *testing.T) {
	t.Parallel()
	pcm := []byte{0x01, 0x00, 0xff, 0x7f}
	tests := []struct {
		name    string
		dialect Dialect
		json    string
		check   func(t *testing.T, ev ClientEvent)
	}{
		{
			name:    "realtime-api-beta on-connect session.update",
			dialect: Beta,
			json: `{"event_id":"evt_Ab12","type":"session.update","session":{"modalities":["text","audio"],"instructions":"","voice":"verse",
				"input_audio_format":"pcm16","output_audio_format":"pcm16","input_audio_transcription":null,"turn_detection":null,
				"tools":[],"tool_choice":"auto","temperature":0.8,"max_response_output_tokens":4096}}`,
			check: func(t *testing.T, ev ClientEvent) {
				u := ev.(*SessionUpdate)
				p := u.Session
				if u.EventID != "evt_Ab12" || u.Shape != Beta || !u.ShapeKnown {
					t.Errorf("header/shape = %+v", u)
				}
				if !p.TurnDetection.Cleared() {
					t.Errorf("turn_detection null must read as cleared: %+v", p.TurnDetection)
				}
				if !p.Instructions.Set() || p.Instructions.Value != "" {
					t.Errorf(`instructions "" must be present: %+v`, p.Instructions)
				}
				if !p.Transcription.Cleared() {
					t.Errorf("transcription null: %+v", p.Transcription)
				}
				if p.ToolChoice.Value != (ToolChoice{Mode: ToolChoiceAuto}) || !p.Tools.Set() || len(p.Tools.Value) != 0 {
					t.Errorf("tools/tool_choice: %+v %+v", p.Tools, p.ToolChoice)
				}
				if p.MaxOutputTokens.Value != 4096 || p.Temperature.Value != 0.8 || p.Voice.Value != "verse" || p.TextOnly.Value {
					t.Errorf("values: %+v", p)
				}
			},
		},
		{
			name:    "realtime-console toggles server_vad on: defaults filled",
			dialect: Beta,
			json:    `{"type":"session.update","session":{"turn_detection":{"type":"server_vad"}}}`,
			check: func(t *testing.T, ev ClientEvent) {
				p := ev.(*SessionUpdate).Session
				if !p.TurnDetection.Set() || p.TurnDetection.Value != DefaultTurnDetection(TurnServerVAD) {
					t.Errorf("turn_detection = %+v", p.TurnDetection)
				}
				if p.Instructions.Present || p.Voice.Present || p.Transcription.Present {
					t.Errorf("absent fields must not be present: %+v", p)
				}
			},
		},
		{
			name:    "realtime-console transcription whisper-1",
			dialect: Beta,
			json:    `{"type":"session.update","session":{"input_audio_transcription":{"model":"whisper-1"}}}`,
			check: func(t *testing.T, ev ClientEvent) {
				u := ev.(*SessionUpdate)
				if u.Session.Transcription.Value.Model != "whisper-1" || !u.ShapeKnown || u.Shape != Beta {
					t.Errorf("%+v", u)
				}
			},
		},
		{
			name:    "agents-js GA session.update with semantic_vad",
			dialect: GA,
			json: `{"type":"session.update","session":{"type":"realtime","model":"gpt-realtime","instructions":"Greet the user.",
				"output_modalities":["audio"],"audio":{"input":{"format":{"type":"audio/pcm","rate":24000},
				"transcription":{"model":"gpt-4o-mini-transcribe"},"turn_detection":{"type":"semantic_vad","eagerness":"medium","create_response":true,"interrupt_response":true},
				"noise_reduction":null},"output":{"format":{"type":"audio/pcm","rate":24000},"voice":"ash","speed":1}},
				"tools":[{"type":"function","name":"get_weather","description":"Weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}],
				"tool_choice":"auto","tracing":"auto","reasoning":{"effort":"low"},"parallel_tool_calls":false}}`,
			check: func(t *testing.T, ev ClientEvent) {
				u := ev.(*SessionUpdate)
				p := u.Session
				if u.Shape != GA || !u.ShapeKnown || p.Type.Value != SessionRealtime {
					t.Errorf("shape %v known %v type %+v", u.Shape, u.ShapeKnown, p.Type)
				}
				td := p.TurnDetection.Value
				if td.Type != TurnSemanticVAD || td.Eagerness != "medium" || !td.InterruptResponse || !td.CreateResponse {
					t.Errorf("turn detection %+v", td)
				}
				if p.Transcription.Value.Model != "gpt-4o-mini-transcribe" || p.Voice.Value != "ash" || p.Speed.Value != 1 {
					t.Errorf("audio %+v", p)
				}
				if !p.NoiseReduction.Cleared() || p.TextOnly.Value || len(p.Tools.Value) != 1 || p.Tools.Value[0].Name != "get_weather" {
					t.Errorf("noise/modalities/tools %+v", p)
				}
				if !p.ParallelToolCalls.Set() || p.ParallelToolCalls.Value {
					t.Errorf("parallel_tool_calls %+v", p.ParallelToolCalls)
				}
				if !reflect.DeepEqual(p.Ignored, []string{"session.reasoning", "session.tracing"}) {
					t.Errorf("ignored %v", p.Ignored)
				}
			},
		},
		{
			name:    "agents-python semantic_vad, telephony formats, format as a beta string inside GA audio",
			dialect: GA,
			json: `{"type":"session.update","session":{"type":"realtime","audio":{"input":{"format":{"type":"audio/pcmu"},
				"turn_detection":{"type":"semantic_vad","interrupt_response":true}},"output":{"format":"g711_alaw","voice":{"id":"voice_x"}}}}}`,
			check: func(t *testing.T, ev ClientEvent) {
				p := ev.(*SessionUpdate).Session
				if p.InputFormat.Value != G711Ulaw || p.OutputFormat.Value != G711Alaw || p.Voice.Value != "voice_x" {
					t.Errorf("%+v", p)
				}
				if p.TurnDetection.Value.Eagerness != EagernessAuto {
					t.Errorf("eagerness default: %+v", p.TurnDetection.Value)
				}
			},
		},
		{
			name:    "GA text-only, max_output_tokens inf, function tool_choice",
			dialect: GA,
			json: `{"type":"session.update","session":{"type":"realtime","output_modalities":["text"],"max_output_tokens":"inf",
				"tool_choice":{"type":"function","name":"f"},"tools":[{"type":"function","name":"f"}]}}`,
			check: func(t *testing.T, ev ClientEvent) {
				p := ev.(*SessionUpdate).Session
				if !p.TextOnly.Value || p.MaxOutputTokens.Value != 0 || !p.MaxOutputTokens.Set() || p.ToolChoice.Value != (ToolChoice{ToolChoiceFunction, "f"}) {
					t.Errorf("%+v", p)
				}
			},
		},
		{
			name:    "beta tool_choice object with function.name",
			dialect: Beta,
			json:    `{"type":"session.update","session":{"tool_choice":{"type":"function","function":{"name":"lookup"}}}}`,
			check: func(t *testing.T, ev ClientEvent) {
				u := ev.(*SessionUpdate)
				if u.Session.ToolChoice.Value != (ToolChoice{ToolChoiceFunction, "lookup"}) || u.ShapeKnown {
					t.Errorf("%+v", u)
				}
			},
		},
		{
			name:    "instructions only: shape unknown, decoded in the connection's dialect",
			dialect: GA,
			json:    `{"type":"session.update","session":{"instructions":"Be brief."}}`,
			check: func(t *testing.T, ev ClientEvent) {
				u := ev.(*SessionUpdate)
				if u.ShapeKnown || u.Shape != GA || u.Session.Instructions.Value != "Be brief." || u.Session.TurnDetection.Present {
					t.Errorf("%+v", u)
				}
			},
		},
		{
			name:    "beta transcription_session.update",
			dialect: Beta,
			json: `{"type":"transcription_session.update","session":{"input_audio_format":"pcm16","input_audio_transcription":{"model":"gpt-4o-transcribe","language":"en"},
				"turn_detection":{"type":"server_vad","silence_duration_ms":300},"input_audio_noise_reduction":{"type":"near_field"},"include":["item.input_audio_transcription.logprobs"]}}`,
			check: func(t *testing.T, ev ClientEvent) {
				u := ev.(*SessionUpdate)
				if !u.Transcription || u.Session.Type.Value != SessionTranscription || u.Session.Transcription.Value.Language != "en" ||
					u.Session.TurnDetection.Value.SilenceDurationMs != 300 || u.Session.NoiseReduction.Value != "near_field" {
					t.Errorf("%+v", u)
				}
			},
		},
		{
			name:    "input_audio_buffer.append decodes base64",
			dialect: Beta,
			json:    `{"event_id":"e1","type":"input_audio_buffer.append","audio":"` + base64.StdEncoding.EncodeToString(pcm) + `"}`,
			check: func(t *testing.T, ev ClientEvent) {
				a := ev.(*InputAudioBufferAppend)
				if !reflect.DeepEqual(a.Audio, pcm) || a.EventID != "e1" {
					t.Errorf("%+v", a)
				}
			},
		},
		{
			name:    "append without padding",
			dialect: GA,
			json:    `{"type":"input_audio_buffer.append","audio":"AQD/fw"}`,
			check: func(t *testing.T, ev ClientEvent) {
				if a := ev.(*InputAudioBufferAppend); !reflect.DeepEqual(a.Audio, pcm) {
					t.Errorf("%v", a.Audio)
				}
			},
		},
		{
			name: "commit", dialect: GA, json: `{"type":"input_audio_buffer.commit"}`,
			check: func(t *testing.T, ev ClientEvent) { _ = ev.(*InputAudioBufferCommit) },
		},
		{
			name: "clear", dialect: GA, json: `{"type":"input_audio_buffer.clear","event_id":"x"}`,
			check: func(t *testing.T, ev ClientEvent) {
				if ev.(*InputAudioBufferClear).ClientEventID() != "x" || ev.EventType() != TypeInputAudioBufferClear {
					t.Error(ev)
				}
			},
		},
		{
			name: "output_audio_buffer.clear", dialect: GA, json: `{"type":"output_audio_buffer.clear"}`,
			check: func(t *testing.T, ev ClientEvent) { _ = ev.(*OutputAudioBufferClear) },
		},
		{
			name:    "realtime-console text message",
			dialect: Beta,
			json:    `{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":"input_text","text":"hello"}]}}`,
			check: func(t *testing.T, ev ClientEvent) {
				c := ev.(*ConversationItemCreate)
				want := Item{Type: ItemMessage, Role: RoleUser, Content: []ContentPart{{Type: InputText, Text: "hello"}}}
				if !reflect.DeepEqual(c.Item, want) || c.PreviousItemID != "" {
					t.Errorf("%+v", c)
				}
			},
		},
		{
			name:    "user audio item, root insert",
			dialect: GA,
			json:    `{"type":"conversation.item.create","previous_item_id":"root","item":{"id":"msg_1","type":"message","role":"user","content":[{"type":"input_audio","audio":"AQD/fw=="}]}}`,
			check: func(t *testing.T, ev ClientEvent) {
				c := ev.(*ConversationItemCreate)
				if c.PreviousItemID != "root" || c.Item.ID != "msg_1" || !reflect.DeepEqual(c.Item.Content[0].Audio, pcm) || c.Item.Content[0].Transcript != nil {
					t.Errorf("%+v", c)
				}
			},
		},
		{
			name:    "beta assistant text item",
			dialect: Beta,
			json:    `{"type":"conversation.item.create","item":{"type":"message","role":"assistant","content":[{"type":"text","text":"Hi."}]}}`,
			check: func(t *testing.T, ev ClientEvent) {
				if p := ev.(*ConversationItemCreate).Item.Content[0]; p.Type != OutputText || p.Text != "Hi." {
					t.Errorf("%+v", p)
				}
			},
		},
		{
			name:    "GA assistant output_text, system input_text",
			dialect: GA,
			json:    `{"type":"conversation.item.create","item":{"type":"message","role":"system","content":[{"type":"input_text","text":"Rules."}]}}`,
			check: func(t *testing.T, ev ClientEvent) {
				if it := ev.(*ConversationItemCreate).Item; it.Role != RoleSystem || it.Content[0].Type != InputText {
					t.Errorf("%+v", it)
				}
			},
		},
		{
			name:    "function_call_output",
			dialect: Beta,
			json:    `{"type":"conversation.item.create","item":{"type":"function_call_output","call_id":"call_1","output":"{\"temp\":21}"}}`,
			check: func(t *testing.T, ev ClientEvent) {
				it := ev.(*ConversationItemCreate).Item
				if it.Type != ItemFunctionCallOutput || it.CallID != "call_1" || it.Output != `{"temp":21}` {
					t.Errorf("%+v", it)
				}
			},
		},
		{
			name:    "realtime-console truncate on barge-in",
			dialect: Beta,
			json:    `{"event_id":"evt_t","type":"conversation.item.truncate","item_id":"item_A","content_index":0,"audio_end_ms":1530}`,
			check: func(t *testing.T, ev ClientEvent) {
				tr := ev.(*ConversationItemTruncate)
				if tr.ItemID != "item_A" || tr.ContentIndex != 0 || tr.AudioEndMs != 1530 {
					t.Errorf("%+v", tr)
				}
			},
		},
		{
			name: "agents retrieve", dialect: GA, json: `{"type":"conversation.item.retrieve","item_id":"item_U"}`,
			check: func(t *testing.T, ev ClientEvent) {
				if ev.(*ConversationItemRetrieve).ItemID != "item_U" {
					t.Error(ev)
				}
			},
		},
		{
			name: "delete", dialect: GA, json: `{"type":"conversation.item.delete","item_id":"item_U"}`,
			check: func(t *testing.T, ev ClientEvent) {
				if ev.(*ConversationItemDelete).ItemID != "item_U" {
					t.Error(ev)
				}
			},
		},
		{
			name: "plain response.create", dialect: Beta, json: `{"type":"response.create"}`,
			check: func(t *testing.T, ev ClientEvent) {
				r := ev.(*ResponseCreate)
				if r.Response.Conversation != "auto" || r.Response.Instructions.Present {
					t.Errorf("%+v", r)
				}
			},
		},
		{
			name:    "beta response.create with overrides",
			dialect: Beta,
			json: `{"type":"response.create","response":{"modalities":["text"],"instructions":"Short.","voice":"alloy","output_audio_format":"g711_ulaw",
				"tool_choice":"required","temperature":0.7,"max_response_output_tokens":200,"conversation":"none","metadata":{"topic":"x"},
				"input":[{"type":"item_reference","id":"item_1"},{"type":"message","role":"user","content":[{"type":"input_text","text":"q"}]}]}}`,
			check: func(t *testing.T, ev ClientEvent) {
				p := ev.(*ResponseCreate).Response
				if !p.TextOnly.Value || p.Instructions.Value != "Short." || p.OutputFormat.Value != G711Ulaw || p.ToolChoice.Value.Mode != ToolChoiceRequired ||
					p.Temperature.Value != 0.7 || p.MaxOutputTokens.Value != 200 || p.Conversation != "none" || p.Metadata["topic"] != "x" {
					t.Errorf("%+v", p)
				}
				if len(p.Input.Value) != 2 || p.Input.Value[0].Type != ItemReference || p.Input.Value[0].ID != "item_1" {
					t.Errorf("input %+v", p.Input)
				}
			},
		},
		{
			name:    "GA response.create with audio.output and tool_choice object",
			dialect: GA,
			json: `{"type":"response.create","response":{"output_modalities":["audio"],"audio":{"output":{"format":{"type":"audio/pcma"},"voice":"marin"}},
				"tool_choice":{"type":"function","name":"f"},"max_output_tokens":"inf"}}`,
			check: func(t *testing.T, ev ClientEvent) {
				p := ev.(*ResponseCreate).Response
				if p.TextOnly.Value || p.OutputFormat.Value != G711Alaw || p.Voice.Value != "marin" || p.ToolChoice.Value.Name != "f" || !p.MaxOutputTokens.Set() {
					t.Errorf("%+v", p)
				}
			},
		},
		{
			name: "response.cancel with id", dialect: GA, json: `{"type":"response.cancel","response_id":"resp_1"}`,
			check: func(t *testing.T, ev ClientEvent) {
				if ev.(*ResponseCancel).ResponseID != "resp_1" {
					t.Error(ev)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := Decode([]byte(tt.json), tt.dialect)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			tt.check(t, ev)
		})
	}
}

// Every refusal is a *Error with the code, param and event_id a client matches on.
func TestDecodeErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		dialect Dialect
		json    string
		code    string
		param   string
		eventID string
		message string // exact, when set
	}{
		{"malformed JSON", GA, `{"type":"session.update",`, CodeInvalidEvent, "", "", ""},
		{"not an object", GA, `[1,2]`, CodeInvalidEvent, "", "", ""},
		{"missing type", GA, `{"event_id":"e7"}`, CodeInvalidEvent, "", "e7", "The 'type' field is missing."},
		{"empty type", GA, `{"type":"","event_id":"e7"}`, CodeInvalidEvent, "", "e7", "The 'type' field is missing."},
		{"type not a string", GA, `{"type":5,"event_id":"e8"}`, CodeInvalidType, "type", "e8", ""},
		{"unknown type", Beta, `{"type":"input_smell_buffer.append","event_id":"e9"}`, CodeInvalidValue, "type", "e9", ""},
		{"base64 that does not decode", GA, `{"type":"input_audio_buffer.append","event_id":"e1","audio":"@@not base64@@"}`, CodeInvalidValue, "audio", "e1", ""},
		{"append without audio", GA, `{"type":"input_audio_buffer.append"}`, CodeMissingRequiredParameter, "audio", "", "Missing required parameter: 'audio'."},
		{"audio not a string", GA, `{"type":"input_audio_buffer.append","audio":12,"event_id":"e2"}`, CodeInvalidType, "audio", "e2", ""},
		{"session.update without session", GA, `{"type":"session.update"}`, CodeMissingRequiredParameter, "session", "", ""},
		{"session not an object", GA, `{"type":"session.update","session":"x"}`, CodeInvalidType, "session", "", ""},
		{"beta field in a GA-shaped session", GA, `{"type":"session.update","event_id":"e3","session":{"type":"realtime","turn_detection":null}}`,
			CodeUnknownParameter, "session.turn_detection", "e3", "Unknown parameter: 'session.turn_detection'."},
		{"temperature is beta only", GA, `{"type":"session.update","session":{"type":"realtime","temperature":0.8}}`, CodeUnknownParameter, "session.temperature", "", ""},
		{"unknown session field", Beta, `{"type":"session.update","session":{"voice":"ash","colour":"red"}}`, CodeUnknownParameter, "session.colour", "", "Unknown parameter: 'session.colour'."},
		{"unknown GA audio field", GA, `{"type":"session.update","session":{"type":"realtime","audio":{"input":{"vad":1}}}}`, CodeUnknownParameter, "session.audio.input.vad", "", ""},
		{"bad beta format", Beta, `{"type":"session.update","session":{"input_audio_format":"mp3"}}`, CodeInvalidValue, "session.input_audio_format", "", ""},
		{"bad GA rate", GA, `{"type":"session.update","session":{"type":"realtime","audio":{"input":{"format":{"type":"audio/pcm","rate":16000}}}}}`, CodeInvalidValue, "session.audio.input.format.rate", "", ""},
		{"bad GA format type", GA, `{"type":"session.update","session":{"type":"realtime","audio":{"output":{"format":{"type":"audio/opus"}}}}}`, CodeInvalidValue, "session.audio.output.format.type", "", ""},
		{"threshold out of range", Beta, `{"type":"session.update","session":{"turn_detection":{"type":"server_vad","threshold":1.5}}}`, CodeInvalidValue, "session.turn_detection.threshold", "", ""},
		{"threshold wrong type", Beta, `{"type":"session.update","session":{"turn_detection":{"threshold":"high"}}}`, CodeInvalidType, "session.turn_detection.threshold", "", ""},
		{"unknown turn type", GA, `{"type":"session.update","session":{"type":"realtime","audio":{"input":{"turn_detection":{"type":"magic"}}}}}`, CodeInvalidValue, "session.audio.input.turn_detection.type", "", ""},
		{"bad eagerness", GA, `{"type":"session.update","session":{"type":"realtime","audio":{"input":{"turn_detection":{"type":"semantic_vad","eagerness":"now"}}}}}`, CodeInvalidValue, "session.audio.input.turn_detection.eagerness", "", ""},
		{"bad modality", Beta, `{"type":"session.update","session":{"modalities":["video"]}}`, CodeInvalidValue, "session.modalities[0]", "", ""},
		{"empty modalities", GA, `{"type":"session.update","session":{"output_modalities":[]}}`, CodeInvalidValue, "session.output_modalities", "", ""},
		{"bad session type", GA, `{"type":"session.update","session":{"type":"translation"}}`, CodeInvalidValue, "session.type", "", ""},
		{"temperature out of range", Beta, `{"type":"session.update","session":{"temperature":2}}`, CodeInvalidValue, "session.temperature", "", ""},
		{"speed out of range", GA, `{"type":"session.update","session":{"type":"realtime","audio":{"output":{"speed":3}}}}`, CodeInvalidValue, "session.audio.output.speed", "", ""},
		{"max tokens out of range", Beta, `{"type":"session.update","session":{"max_response_output_tokens":5000}}`, CodeInvalidValue, "session.max_response_output_tokens", "", ""},
		{"hosted tool of another type", GA, `{"type":"session.update","session":{"type":"realtime","tools":[{"type":"web_search"}]}}`, CodeInvalidValue, "session.tools[0].type", "", ""},
		{"tool without name", GA, `{"type":"session.update","session":{"tools":[{"type":"function"}]}}`, CodeMissingRequiredParameter, "session.tools[0].name", "", ""},
		{"tool_choice object without name", GA, `{"type":"session.update","session":{"tool_choice":{"type":"function"}}}`, CodeMissingRequiredParameter, "session.tool_choice.name", "", ""},
		{"bad noise reduction", GA, `{"type":"session.update","session":{"type":"realtime","audio":{"input":{"noise_reduction":{"type":"studio"}}}}}`, CodeInvalidValue, "session.audio.input.noise_reduction.type", "", ""},
		{"beta assistant input_text", Beta, `{"type":"conversation.item.create","event_id":"e4","item":{"type":"message","role":"assistant","content":[{"type":"input_text","text":"x"}]}}`,
			CodeInvalidValue, "item.content[0].type", "e4", "Invalid value: 'input_text'. Value must be 'text'."},
		{"GA assistant input_text", GA, `{"type":"conversation.item.create","item":{"type":"message","role":"assistant","content":[{"type":"input_text","text":"x"}]}}`,
			CodeInvalidValue, "item.content[0].type", "", "Invalid value: 'input_text'. Value must be 'output_text'."},
		{"beta user image", Beta, `{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":"input_image","image_url":"data:"}]}}`, CodeInvalidValue, "item.content[0].type", "", ""},
		{"item audio not base64", GA, `{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":"input_audio","audio":"***"}]}}`, CodeInvalidValue, "item.content[0].audio", "", ""},
		{"item without type or role", GA, `{"type":"conversation.item.create","item":{"content":[]}}`, CodeMissingRequiredParameter, "item.type", "", ""},
		{"item bad type", GA, `{"type":"conversation.item.create","item":{"type":"picture"}}`, CodeInvalidValue, "item.type", "", ""},
		{"item bad role", GA, `{"type":"conversation.item.create","item":{"type":"message","role":"robot","content":[]}}`, CodeInvalidValue, "item.role", "", ""},
		{"item missing", GA, `{"type":"conversation.item.create"}`, CodeMissingRequiredParameter, "item", "", ""},
		{"item_reference cannot be created", GA, `{"type":"conversation.item.create","item":{"type":"item_reference","id":"x"}}`, CodeInvalidValue, "item.type", "", ""},
		{"function_call_output without call_id", Beta, `{"type":"conversation.item.create","item":{"type":"function_call_output","output":"1"}}`, CodeMissingRequiredParameter, "item.call_id", "", ""},
		{"content wrong type", GA, `{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":"input_text","text":7}]}}`, CodeInvalidType, "item.content[0].text", "", ""},
		{"truncate without item_id", Beta, `{"type":"conversation.item.truncate","content_index":0,"audio_end_ms":1}`, CodeMissingRequiredParameter, "item_id", "", ""},
		{"truncate without audio_end_ms", Beta, `{"type":"conversation.item.truncate","item_id":"a","content_index":0}`, CodeMissingRequiredParameter, "audio_end_ms", "", ""},
		{"truncate negative", Beta, `{"type":"conversation.item.truncate","item_id":"a","content_index":0,"audio_end_ms":-5}`, CodeInvalidValue, "audio_end_ms", "", ""},
		{"truncate float ms", Beta, `{"type":"conversation.item.truncate","item_id":"a","content_index":0,"audio_end_ms":1.5}`, CodeInvalidType, "audio_end_ms", "", ""},
		{"retrieve without item_id", GA, `{"type":"conversation.item.retrieve"}`, CodeMissingRequiredParameter, "item_id", "", ""},
		{"response unknown param", GA, `{"type":"response.create","response":{"colour":1}}`, CodeUnknownParameter, "response.colour", "", ""},
		{"response bad conversation", GA, `{"type":"response.create","response":{"conversation":"other"}}`, CodeInvalidValue, "response.conversation", "", ""},
		{"response input item error names its index", GA, `{"type":"response.create","response":{"input":[{"type":"message","role":"user","content":[{"type":"nope"}]}]}}`, CodeInvalidValue, "response.input[0].content[0].type", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := Decode([]byte(tt.json), tt.dialect)
			if err == nil {
				t.Fatalf("Decode accepted %s as %T", tt.json, ev)
			}
			if ev != nil {
				t.Errorf("event %v returned with an error", ev)
			}
			var we *Error
			if !errors.As(err, &we) {
				t.Fatalf("error %T is not a *wire.Error: %v", err, err)
			}
			if we.Type != TypeInvalidRequest || we.Code != tt.code || we.Param != tt.param || we.EventID != tt.eventID {
				t.Errorf("got type=%s code=%s param=%q event_id=%q (%s); want code=%s param=%q event_id=%q",
					we.Type, we.Code, we.Param, we.EventID, we.Message, tt.code, tt.param, tt.eventID)
			}
			if tt.message != "" && we.Message != tt.message {
				t.Errorf("message %q, want %q", we.Message, tt.message)
			}
			if we.Message == "" {
				t.Error("empty message")
			}
		})
	}
}

func TestRedecide(t *testing.T) {
	t.Parallel()
	decodeUpdate := func(t *testing.T, js string, d Dialect) *SessionUpdate {
		t.Helper()
		ev, err := Decode([]byte(js), d)
		if err != nil {
			t.Fatal(err)
		}
		return ev.(*SessionUpdate)
	}
	const gaUpdate = `{"type":"session.update","event_id":"u1","session":{"type":"realtime","instructions":"x"}}`
	const betaUpdate = `{"type":"session.update","event_id":"u2","session":{"turn_detection":null}}`
	const neutral = `{"type":"session.update","session":{"instructions":"x"}}`
	tests := []struct {
		name      string
		json      string
		current   Dialect
		first     bool
		want      Dialect
		wantParam string // "" = no error
	}{
		{"openai-node 5.18 beta marker, GA first update", gaUpdate, Beta, true, GA, ""},
		{"beta client confirms beta", betaUpdate, Beta, true, Beta, ""},
		{"GA handshake, beta-shaped first update", betaUpdate, GA, true, Beta, ""},
		{"neutral update decides nothing", neutral, Beta, true, Beta, ""},
		{"later GA update on a beta connection", gaUpdate, Beta, false, Beta, "session.type"},
		{"later beta update on a GA connection", betaUpdate, GA, false, GA, "session.turn_detection"},
		{"later same-shape update", gaUpdate, GA, false, GA, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := decodeUpdate(t, tt.json, tt.current)
			got, err := u.Redecide(tt.current, tt.first)
			if got != tt.want {
				t.Errorf("dialect %v, want %v", got, tt.want)
			}
			if tt.wantParam == "" {
				if err != nil {
					t.Errorf("unexpected error %v", err)
				}
				return
			}
			var we *Error
			if !errors.As(err, &we) || we.Code != CodeUnknownParameter || we.Param != tt.wantParam || we.EventID != u.EventID {
				t.Errorf("error %v, want unknown_parameter %s", err, tt.wantParam)
			}
		})
	}
}

func TestDialectFromHandshake(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		header http.Header
		want   Dialect
	}{
		{"no marker: GA", http.Header{"Authorization": {"Bearer x"}}, GA},
		{"OpenAI-Beta header", http.Header{"Openai-Beta": {"realtime=v1"}}, Beta},
		{"OpenAI-Beta among others", http.Header{"Openai-Beta": {"assistants=v2, realtime=v1"}}, Beta},
		{"browser subprotocol", http.Header{"Sec-Websocket-Protocol": {"realtime, openai-insecure-api-key.ek_1, openai-beta.realtime-v1"}}, Beta},
		{"GA browser subprotocols", http.Header{"Sec-Websocket-Protocol": {"realtime", "openai-insecure-api-key.ek_1"}}, GA},
		{"agents-js subprotocol", http.Header{"Sec-Websocket-Protocol": {"realtime, openai-agents-sdk.0.3.7"}}, GA},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DialectFromHandshake(tt.header); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// Session updates as @openai/agents-realtime 0.3.7 builds them (its
// _getMergedSessionConfig run under Node 20: defaults; a voice and eager
// semantic_vad; text only, G.711 μ-law, one tool).
func TestDecodeAgentsJSSessionUpdates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		json string
		want func(s *Session)
	}{
		{"defaults", `{"type":"session.update","session":{"type":"realtime","model":"gpt-realtime","output_modalities":["audio"],"audio":{"input":{"format":{"type":"audio/pcm","rate":24000},"noise_reduction":null,"transcription":{"model":"gpt-4o-mini-transcribe"},"turn_detection":{"type":"semantic_vad"}},"output":{"format":{"type":"audio/pcm","rate":24000},"speed":1}}}}`,
			func(s *Session) {
				s.Transcription = &Transcription{Model: "gpt-4o-mini-transcribe"}
				s.TurnDetection = DefaultTurnDetection(TurnSemanticVAD)
			}},
		{"voice and eager semantic_vad", `{"type":"session.update","session":{"type":"realtime","instructions":"Be brief.","model":"gpt-realtime","output_modalities":["audio"],"audio":{"input":{"format":{"type":"audio/pcm","rate":24000},"noise_reduction":null,"transcription":{"model":"gpt-4o-mini-transcribe"},"turn_detection":{"type":"semantic_vad","eagerness":"high","interrupt_response":true}},"output":{"format":{"type":"audio/pcm","rate":24000},"voice":"ash","speed":1}}}}`,
			func(s *Session) {
				s.Instructions, s.Voice = "Be brief.", "ash"
				s.Transcription = &Transcription{Model: "gpt-4o-mini-transcribe"}
				s.TurnDetection = DefaultTurnDetection(TurnSemanticVAD)
				s.TurnDetection.Eagerness = EagernessHigh
			}},
		{"text only, μ-law, a tool", `{"type":"session.update","session":{"type":"realtime","model":"gpt-realtime","output_modalities":["text"],"audio":{"input":{"format":{"type":"audio/pcmu"},"noise_reduction":null,"transcription":{"model":"gpt-4o-mini-transcribe"},"turn_detection":{"type":"semantic_vad"}},"output":{"format":{"type":"audio/pcmu"},"speed":1}},"tools":[{"type":"function","name":"get_weather","description":"d","parameters":{"type":"object","properties":{}}}]}}`,
			func(s *Session) {
				s.TextOnly, s.InputFormat, s.OutputFormat = true, G711Ulaw, G711Ulaw
				s.Transcription = &Transcription{Model: "gpt-4o-mini-transcribe"}
				s.TurnDetection = DefaultTurnDetection(TurnSemanticVAD)
				s.Tools = []Tool{{Type: "function", Name: "get_weather", Description: "d", Parameters: []byte(`{"type":"object","properties":{}}`)}}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := Decode([]byte(tt.json), Beta) // openai-node 5.18–5.23 sent the beta marker with GA shapes
			if err != nil {
				t.Fatal(err)
			}
			u := ev.(*SessionUpdate)
			if d, err := u.Redecide(Beta, true); d != GA || err != nil {
				t.Fatalf("Redecide: %v %v", d, err)
			}
			s := NewSession("sess_1", "gpt-realtime")
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

// TestDecodeAppendEscapes: the fast path reads appends whose audio escapes base64's characters as
// common encoders do (PHP's json_encode escapes '/', .NET's System.Text.Json '+'), so those
// clients' audio is not read by encoding/json (nor charged to the session's byte budget); any
// other escape is left to the general path. Both paths give the same event.
func TestDecodeAppendEscapes(t *testing.T) {
	t.Parallel()
	pcm := make([]byte, 3000)
	for i := range pcm {
		pcm[i] = byte(i * 7)
	}
	b64 := base64.StdEncoding.EncodeToString(pcm)
	for _, tt := range []struct {
		name  string
		audio string
		fast  bool
	}{
		{"plain", b64, true},
		{"PHP", strings.ReplaceAll(b64, "/", `\/`), true},
		{".NET", strings.ReplaceAll(b64, "+", `\u002B`), true},
		{"lower-case hex", strings.ReplaceAll(b64, "+", `\u002b`), true},
		{"an escaped letter", `\u0041` + b64[1:], true},
		{"a newline escape", b64[:4] + `\n` + b64[4:], false},
		{"an escape of something not base64", b64[:4] + `\u0040` + b64[4:], false},
		{"a cut escape", b64 + `\u00`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			data := []byte(`{"type":"input_audio_buffer.append","event_id":"e1","audio":"` + tt.audio + `"}`)
			fast, ok := DecodeAppend(data)
			if ok != tt.fast {
				t.Fatalf("fast path %v, want %v", ok, tt.fast)
			}
			general, err := DecodeGeneral(data, GA)
			if ok {
				if err != nil || !reflect.DeepEqual(general, ClientEvent(fast)) {
					t.Fatalf("fast %+v, general %+v, %v", fast, general, err)
				}
				want := pcm
				if tt.name == "an escaped letter" {
					want, _ = base64.StdEncoding.DecodeString("A" + b64[1:])
				}
				if !bytes.Equal(fast.Audio, want) {
					t.Fatal("audio differs")
				}
			}
		})
	}
}
