package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestDecodeBounds: every field the session keeps past the event is bounded at decode, refused by
// name (code, param), and the bound itself is accepted.
func TestDecodeBounds(t *testing.T) {
	t.Parallel()
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	long := func(n int) string { return strings.Repeat("x", n) }
	tools := func(n int, name, desc string) string {
		var list []string
		for i := range n {
			list = append(list, fmt.Sprintf(`{"type":"function","name":%s,"description":%s}`, q(fmt.Sprint(name, i)), q(desc)))
		}
		return "[" + strings.Join(list, ",") + "]"
	}
	metadata := func(n int) string {
		var pairs []string
		for i := range n {
			pairs = append(pairs, fmt.Sprintf(`"k%d":"v"`, i))
		}
		return "{" + strings.Join(pairs, ",") + "}"
	}
	userText := `"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]`
	tests := []struct {
		name        string
		json        func(n int) string // n: the bound's length (accepted), n+1 refused
		bound       int
		code, param string
		wantEventID string
		dialect     Dialect
	}{
		{name: "event_id", bound: MaxIDBytes, code: CodeStringTooLong, param: "event_id",
			json: func(n int) string { return `{"type":"input_audio_buffer.clear","event_id":` + q(long(n)) + `}` }},
		{name: "event_id of an append", bound: MaxIDBytes, code: CodeStringTooLong, param: "event_id",
			json: func(n int) string {
				return `{"type":"input_audio_buffer.append","event_id":` + q(long(n)) + `,"audio":"AAA="}`
			}},
		{name: "item.id", bound: MaxIDBytes, code: CodeStringTooLong, param: "item.id", wantEventID: "e1",
			json: func(n int) string {
				return `{"type":"conversation.item.create","event_id":"e1","item":{"id":` + q(long(n)) + `,` + userText + `}}`
			}},
		{name: "previous_item_id", bound: MaxIDBytes, code: CodeStringTooLong, param: "previous_item_id",
			json: func(n int) string {
				return `{"type":"conversation.item.create","previous_item_id":` + q(long(n)) + `,"item":{` + userText + `}}`
			}},
		{name: "call_id", bound: MaxIDBytes, code: CodeStringTooLong, param: "item.call_id",
			json: func(n int) string {
				return `{"type":"conversation.item.create","item":{"type":"function_call_output","call_id":` + q(long(n)) + `,"output":"1"}}`
			}},
		{name: "session.model", bound: MaxModelBytes, code: CodeStringTooLong, param: "session.model", wantEventID: "e1",
			json: func(n int) string {
				return `{"type":"session.update","event_id":"e1","session":{"model":` + q(long(n)) + `}}`
			}},
		{name: "function_call name", bound: MaxNameBytes, code: CodeStringTooLong, param: "item.name",
			json: func(n int) string {
				return `{"type":"conversation.item.create","item":{"type":"function_call","name":` + q(long(n)) + `,"arguments":"{}"}}`
			}},
		{name: "item_id of a delete", bound: MaxIDBytes, code: CodeStringTooLong, param: "item_id",
			json: func(n int) string { return `{"type":"conversation.item.delete","item_id":` + q(long(n)) + `}` }},
		{name: "response_id of a cancel", bound: MaxIDBytes, code: CodeStringTooLong, param: "response_id",
			json: func(n int) string { return `{"type":"response.cancel","response_id":` + q(long(n)) + `}` }},
		{name: "response input item_reference id", bound: MaxIDBytes, code: CodeStringTooLong, param: "response.input[0].id",
			json: func(n int) string {
				return `{"type":"response.create","response":{"input":[{"type":"item_reference","id":` + q(long(n)) + `}]}}`
			}},
		{name: "session instructions", bound: MaxInstructionsBytes, code: CodeStringTooLong, param: "session.instructions",
			json: func(n int) string { return `{"type":"session.update","session":{"instructions":` + q(long(n)) + `}}` }},
		{name: "response instructions", bound: MaxInstructionsBytes, code: CodeStringTooLong, param: "response.instructions",
			json: func(n int) string { return `{"type":"response.create","response":{"instructions":` + q(long(n)) + `}}` }},
		{name: "beta voice", bound: MaxNameBytes, code: CodeStringTooLong, param: "session.voice", dialect: Beta,
			json: func(n int) string { return `{"type":"session.update","session":{"voice":` + q(long(n)) + `}}` }},
		{name: "GA voice id", bound: MaxNameBytes, code: CodeStringTooLong, param: "session.audio.output.voice.id",
			json: func(n int) string {
				return `{"type":"session.update","session":{"type":"realtime","audio":{"output":{"voice":{"id":` + q(long(n)) + `}}}}}`
			}},
		{name: "tool count", bound: MaxTools, code: CodeArrayTooLong, param: "session.tools",
			json: func(n int) string { return `{"type":"session.update","session":{"tools":` + tools(n, "f", "") + `}}` }},
		{name: "tool name", bound: MaxNameBytes, code: CodeStringTooLong, param: "session.tools[0].name",
			json: func(n int) string {
				return `{"type":"session.update","session":{"tools":[{"type":"function","name":` + q(long(n)) + `}]}}`
			}},
		{name: "tools' bytes together", bound: MaxToolsBytes, code: CodeStringTooLong, param: "response.tools",
			json: func(n int) string {
				// 4 tools named f0..f3, "function" each: the descriptions make up the rest.
				desc := (n - 4*(len("function")+2)) / 4
				extra := n - 4*(len("function")+2) - 4*desc
				list := tools(4, "f", long(desc))
				if extra > 0 {
					list = strings.Replace(list, `"description":"`, `"description":"`+long(extra), 1)
				}
				return `{"type":"response.create","response":{"tools":` + list + `}}`
			}},
		{name: "tool_choice name", bound: MaxNameBytes, code: CodeStringTooLong, param: "session.tool_choice.name",
			json: func(n int) string {
				return `{"type":"session.update","session":{"tool_choice":{"type":"function","name":` + q(long(n)) + `}}}`
			}},
		{name: "transcription prompt", bound: MaxTranscriptionPromptBytes, code: CodeStringTooLong, param: "session.input_audio_transcription.prompt", dialect: Beta,
			json: func(n int) string {
				return `{"type":"session.update","session":{"input_audio_transcription":{"model":"whisper-1","prompt":` + q(long(n)) + `}}}`
			}},
		{name: "metadata pairs", bound: MaxMetadataPairs, code: CodeArrayTooLong, param: "response.metadata",
			json: func(n int) string { return `{"type":"response.create","response":{"metadata":` + metadata(n) + `}}` }},
		{name: "metadata key", bound: MaxMetadataKeyBytes, code: CodeStringTooLong, param: "response.metadata",
			json: func(n int) string {
				return `{"type":"response.create","response":{"metadata":{` + q(long(n)) + `:"v"}}}`
			}},
		{name: "metadata value", bound: MaxMetadataValueBytes, code: CodeStringTooLong, param: "response.metadata.k",
			json: func(n int) string {
				return `{"type":"response.create","response":{"metadata":{"k":` + q(long(n)) + `}}}`
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if ev, err := Decode([]byte(tt.json(tt.bound)), tt.dialect); err != nil {
				t.Fatalf("at the bound (%d): refused: %v", tt.bound, err)
			} else if ev == nil {
				t.Fatal("no event")
			}
			_, err := Decode([]byte(tt.json(tt.bound+1)), tt.dialect)
			var we *Error
			if !errors.As(err, &we) {
				t.Fatalf("past the bound (%d): %v, want a *wire.Error", tt.bound+1, err)
			}
			if we.Type != TypeInvalidRequest || we.Code != tt.code || we.Param != tt.param || we.EventID != tt.wantEventID {
				t.Errorf("got type=%s code=%s param=%q event_id=%q (%s); want code=%s param=%q event_id=%q",
					we.Type, we.Code, we.Param, we.EventID, we.Message, tt.code, tt.param, tt.wantEventID)
			}
			if len(we.Message) > 512 {
				t.Errorf("the refusal's message is %d bytes: it must not echo the value", len(we.Message))
			}
		})
	}
}

// TestDecodeMetadataTypes: a response.metadata that is not an object of strings is named by what
// was got (issue 18 8i: it read "expected an object, but got an object").
func TestDecodeMetadataTypes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		metadata, param, message string
	}{
		{`"x"`, "response.metadata", "Invalid type for 'response.metadata': expected an object, but got a string instead."},
		{`[1]`, "response.metadata", "Invalid type for 'response.metadata': expected an object, but got an array instead."},
		{`5`, "response.metadata", "Invalid type for 'response.metadata': expected an object, but got a number instead."},
		{`{"a":1}`, "response.metadata.a", "Invalid type for 'response.metadata.a': expected a string, but got a number instead."},
		{`{"a":{"b":"c"}}`, "response.metadata.a", "Invalid type for 'response.metadata.a': expected a string, but got an object instead."},
		{`{"a":["b"]}`, "response.metadata.a", "Invalid type for 'response.metadata.a': expected a string, but got an array instead."},
		{`{"a":true}`, "response.metadata.a", "Invalid type for 'response.metadata.a': expected a string, but got a boolean instead."},
	}
	for _, tt := range tests {
		_, err := Decode([]byte(`{"type":"response.create","event_id":"e","response":{"metadata":`+tt.metadata+`}}`), GA)
		var we *Error
		if !errors.As(err, &we) {
			t.Fatalf("metadata %s: %v", tt.metadata, err)
		}
		if we.Code != CodeInvalidType || we.Param != tt.param || we.Message != tt.message || we.EventID != "e" {
			t.Errorf("metadata %s: code=%s param=%q %q; want param=%q %q", tt.metadata, we.Code, we.Param, we.Message, tt.param, tt.message)
		}
	}
	ev, err := Decode([]byte(`{"type":"response.create","response":{"metadata":{"topic":"x","null":"y"}}}`), GA)
	if err != nil {
		t.Fatal(err)
	}
	if m := ev.(*ResponseCreate).Response.Metadata; m["topic"] != "x" || m["null"] != "y" || len(m) != 2 {
		t.Errorf("metadata %v", m)
	}
}
