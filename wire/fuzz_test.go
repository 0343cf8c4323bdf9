package wire

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
)

var fuzzSeeds = []string{
	`{"type":"session.update","session":{"modalities":["text","audio"],"instructions":"","voice":"verse","input_audio_format":"pcm16","output_audio_format":"pcm16","input_audio_transcription":null,"turn_detection":null,"tools":[],"tool_choice":"auto","temperature":0.8,"max_response_output_tokens":4096}}`,
	`{"type":"session.update","session":{"type":"realtime","output_modalities":["audio"],"audio":{"input":{"format":{"type":"audio/pcm","rate":24000},"transcription":{"model":"gpt-4o-mini-transcribe"},"turn_detection":{"type":"semantic_vad"}},"output":{"voice":{"id":"v"},"speed":1.2}},"tool_choice":{"type":"function","name":"f"},"tools":[{"type":"function","name":"f","parameters":{}}]}}`,
	`{"type":"transcription_session.update","session":{"input_audio_transcription":{"model":"whisper-1"},"turn_detection":{"type":"server_vad","threshold":0.4}}}`,
	`{"type":"input_audio_buffer.append","audio":"AQD/fw=="}`,
	`{"type":"input_audio_buffer.commit","event_id":"x"}`,
	`{"type":"conversation.item.create","previous_item_id":"root","item":{"type":"message","role":"user","content":[{"type":"input_audio","audio":"AAAA","transcript":"hi"},{"type":"input_text","text":"x"}]}}`,
	`{"type":"conversation.item.create","item":{"type":"function_call_output","call_id":"c","output":"1"}}`,
	`{"type":"conversation.item.truncate","item_id":"a","content_index":0,"audio_end_ms":10}`,
	`{"type":"conversation.item.retrieve","item_id":"a"}`,
	`{"type":"response.create","response":{"input":[{"type":"item_reference","id":"a"}],"audio":{"output":{"format":"g711_ulaw"}},"metadata":{"a":"b"}}}`,
	`{"type":"response.cancel"}`,
	`{"type":"input_audio_buffer.append","event_id":"e\u0031","audio":"AQD/fw=="}`,
	` { "audio" : "AQD/fw" , "type":"input_audio_buffer.append" } `,
	`{"type":"input_audio_buffer.append","audio":"AQD\/fw\u002b\u002B\u003D"}`,
	`{"type":"input_audio_buffer.append","audio":"AQD\u0041\n"}`,
	`{"type":"session.update","session":{"type":"realtime","tools":[{"type":"mcp","server_label":"o","server_url":"http://h/mcp","authorization":"t","headers":{"X":"y"},"allowed_tools":{"tool_names":["a"]},"require_approval":{"always":{"tool_names":["a"]},"never":{"tool_names":["b"]}}}]}}`,
	`{"type":"conversation.item.create","previous_item_id":"r","item":{"type":"mcp_approval_response","approval_request_id":"r","approve":false,"reason":"no"}}`,
	`{"type":5}`, `[]`, `null`, `{"type":"session.update","session":{"audio":{"input":null}}}`, `{`,
}

// FuzzDecode: Decode never panics; every refusal is a *Error with a code and
// a message; what it accepts can be applied and encoded back.
func FuzzDecode(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, beta bool) {
		d := GA
		if beta {
			d = Beta
		}
		ev, err := Decode(data, d)
		if fast, ok := appendFast(data); ok {
			general, gerr := decodeGeneral(data, d)
			if gerr != nil || !reflect.DeepEqual(general, ClientEvent(fast)) {
				t.Fatalf("fast append path %+v differs from the general path %+v, %v", fast, general, gerr)
			}
		}
		if err != nil {
			var we *Error
			if !errors.As(err, &we) || we.Code == "" || we.Message == "" || we.Type != TypeInvalidRequest {
				t.Fatalf("refusal %T %v is not a complete *wire.Error", err, err)
			}
			if ev != nil {
				t.Fatalf("event %v with error", ev)
			}
			if _, err := NewEncoder(d).Encode(we); err != nil {
				t.Fatal(err)
			}
			return
		}
		if ev == nil {
			t.Fatal("nil event without error")
		}
		enc := NewEncoder(d)
		var out ServerEvent
		switch ev := ev.(type) {
		case *SessionUpdate:
			s := NewSession("sess_1", "m")
			if _, err := ev.Redecide(d, false); err == nil {
				if err := s.Apply(ev); err != nil {
					var we *Error
					if !errors.As(err, &we) {
						t.Fatalf("Apply error %T", err)
					}
				}
			}
			out = SessionUpdated{s}
		case *ConversationItemCreate:
			out = ConversationItemRetrieved{ev.Item}
		case *ResponseCreate:
			out = ResponseCreated{NewResponse("resp_1", "conv_1", NewSession("s", "m").ForResponse(ev.Response))}
		default:
			return
		}
		b, err := enc.Encode(out)
		if err != nil {
			t.Fatalf("encode %T: %v", out, err)
		}
		if !json.Valid(b) {
			t.Fatalf("invalid JSON %s", b)
		}
	})
}

// 100 ms of 24 kHz PCM16 is 4800 bytes, 6400 base64 characters: the common append.
func BenchmarkDecodeAppend100ms(b *testing.B) {
	pcm := make([]byte, 4800)
	for i := range pcm {
		pcm[i] = byte(i * 7)
	}
	frame := fmt.Appendf(nil, `{"event_id":"evt_1234","type":"input_audio_buffer.append","audio":"%s"}`, base64.StdEncoding.EncodeToString(pcm))
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		ev, err := Decode(frame, GA)
		if err != nil || len(ev.(*InputAudioBufferAppend).Audio) != 4800 {
			b.Fatal(err)
		}
	}
}

// One 100 ms reply audio delta, encoded for the wire.
func BenchmarkEncodeAudioDelta100ms(b *testing.B) {
	ev := ResponseAudioDelta{PartRef{"resp_1", "item_1", 0, 0}, make([]byte, 4800)}
	enc := NewEncoder(GA)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := enc.Encode(ev); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzPeekEventID: PeekEventID never panics, and on a valid JSON object it finds the event_id
// encoding/json finds (the last member of that name) whenever that id may be echoed as is.
func FuzzPeekEventID(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	for _, s := range []string{`{"event_id":"a","event_id":"b"}`, `{"x":{"event_id":"no"},"event_id":"yes"}`,
		`{"x":"q\"uo\\\\","event_id":"e"}`, `{"event_id":"e\u0031"}`, `{"event_id":5}`, `{"a":[1,{"b":[]}],"event_id":"e"} `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got := PeekEventID(data)
		var m map[string]json.RawMessage
		if json.Unmarshal(data, &m) != nil {
			return
		}
		var want string
		raw, ok := m["event_id"]
		if ok && json.Unmarshal(raw, &want) == nil && !bytes.Contains(raw, []byte(`\`)) &&
			len(want) <= MaxIDBytes && printableASCII([]byte(want)) {
			if got != want {
				t.Fatalf("PeekEventID %q, want %q", got, want)
			}
		} else if got != "" {
			t.Fatalf("PeekEventID %q of an id it may not echo (%s)", got, raw)
		}
	})
}
