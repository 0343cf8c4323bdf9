package wire

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	openairt "github.com/WqyJh/go-openai-realtime"
)

var (
	ref          = PartRef{ResponseID: "resp_1", ItemID: "item_A", OutputIndex: 0, ContentIndex: 0}
	userAudio    = Item{ID: "item_U", Type: ItemMessage, Status: ItemCompleted, Role: RoleUser, Content: []ContentPart{{Type: InputAudio, Audio: []byte{1, 2}}}}
	assistantNew = Item{ID: "item_A", Type: ItemMessage, Status: ItemInProgress, Role: RoleAssistant}
	assistantEnd = Item{ID: "item_A", Type: ItemMessage, Status: ItemCompleted, Role: RoleAssistant,
		Content: []ContentPart{{Type: OutputAudio, Transcript: new("Hello there."), Audio: []byte{9, 9}}}}
	callItem = Item{ID: "item_F", Type: ItemFunctionCall, Status: ItemInProgress, CallID: "call_1", Name: "get_weather"}
	outItem  = Item{ID: "item_O", Type: ItemFunctionCallOutput, CallID: "call_1", Output: "{}"}
)

func testSession() Session {
	s := NewSession("sess_1", "gpt-realtime")
	s.Tools = []Tool{{Type: "function", Name: "get_weather", Description: "Weather", Parameters: json.RawMessage(`{"type":"object"}`)}}
	s.ToolChoice = ToolChoice{Mode: ToolChoiceFunction, Name: "get_weather"}
	s.Transcription = &Transcription{Model: "whisper-1"}
	return s
}

func doneResponse() Response {
	r := NewResponse("resp_1", "conv_1", testSession())
	r.Status = ResponseCancelled
	r.StatusDetails = &StatusDetails{Type: ResponseCancelled, Reason: ReasonTurnDetected}
	r.Output = []Item{assistantEnd, callItem}
	r.Usage = &Usage{InputAudioTokens: 10, OutputTextTokens: 3, HeardSeconds: 1.5, SpokenSeconds: 2.25}
	return r
}

// serverEvents is one of every server event, with the names it carries.
var serverEvents = []struct {
	ev         ServerEvent
	beta, ga   string
	gaRequired []string // beyond type and event_id (openai-python GA models; docs §5)
}{
	{ErrInvalidValue("session.voice", "evt_1", "bad"), "error", "error", []string{"error"}},
	{SessionCreated{testSession()}, "session.created", "session.created", []string{"session"}},
	{SessionUpdated{testSession()}, "session.updated", "session.updated", []string{"session"}},
	{SessionCreated{Session{ID: "sess_t", Type: SessionTranscription}}, "transcription_session.created", "session.created", []string{"session"}},
	{SessionUpdated{Session{ID: "sess_t", Type: SessionTranscription}}, "transcription_session.updated", "session.updated", []string{"session"}},
	{ConversationCreated{"conv_1"}, "conversation.created", "conversation.created", []string{"conversation"}},
	{InputAudioBufferSpeechStarted{AudioStartMs: 1200, ItemID: "item_U"}, "input_audio_buffer.speech_started", "input_audio_buffer.speech_started", []string{"audio_start_ms", "item_id"}},
	{InputAudioBufferSpeechStopped{AudioEndMs: 2400, ItemID: "item_U"}, "input_audio_buffer.speech_stopped", "input_audio_buffer.speech_stopped", []string{"audio_end_ms", "item_id"}},
	{InputAudioBufferCommitted{ItemID: "item_U"}, "input_audio_buffer.committed", "input_audio_buffer.committed", []string{"item_id", "previous_item_id"}},
	{InputAudioBufferCleared{}, "input_audio_buffer.cleared", "input_audio_buffer.cleared", nil},
	{InputAudioBufferTimeoutTriggered{AudioStartMs: 1, AudioEndMs: 2, ItemID: "item_U"}, "", "input_audio_buffer.timeout_triggered", []string{"audio_start_ms", "audio_end_ms", "item_id"}},
	{ConversationItemAdded{Item: userAudio}, "conversation.item.created", "conversation.item.added", []string{"item", "previous_item_id"}},
	{ConversationItemAdded{PreviousItemID: "item_U", Item: assistantNew}, "conversation.item.created", "conversation.item.added", []string{"item"}},
	{ConversationItemAdded{PreviousItemID: "item_A", Item: callItem}, "conversation.item.created", "conversation.item.added", []string{"item"}},
	{ConversationItemAdded{Item: outItem}, "conversation.item.created", "conversation.item.added", []string{"item"}},
	{ConversationItemDone{PreviousItemID: "item_U", Item: assistantEnd}, "", "conversation.item.done", []string{"item"}},
	{ConversationItemRetrieved{Item: userAudio}, "conversation.item.retrieved", "conversation.item.retrieved", []string{"item"}},
	{ConversationItemTruncated{ItemID: "item_A", AudioEndMs: 1500}, "conversation.item.truncated", "conversation.item.truncated", []string{"item_id", "content_index", "audio_end_ms"}},
	{ConversationItemDeleted{ItemID: "item_A"}, "conversation.item.deleted", "conversation.item.deleted", []string{"item_id"}},
	{InputAudioTranscriptionDelta{ItemID: "item_U", Delta: "Hel"}, "conversation.item.input_audio_transcription.delta", "conversation.item.input_audio_transcription.delta", []string{"item_id", "content_index", "delta"}},
	{InputAudioTranscriptionCompleted{ItemID: "item_U", Transcript: "Hello.", Seconds: 1.2}, "conversation.item.input_audio_transcription.completed", "conversation.item.input_audio_transcription.completed", []string{"item_id", "content_index", "transcript", "usage"}},
	{InputAudioTranscriptionFailed{ItemID: "item_U", Error: ErrServer("decoder failed", "")}, "conversation.item.input_audio_transcription.failed", "conversation.item.input_audio_transcription.failed", []string{"item_id", "content_index", "error"}},
	{ResponseCreated{NewResponse("resp_1", "conv_1", testSession())}, "response.created", "response.created", []string{"response"}},
	{RateLimitsUpdated{[]RateLimit{{Name: "tokens", Limit: 1000, Remaining: 990, ResetSeconds: 1.5}}}, "rate_limits.updated", "rate_limits.updated", []string{"rate_limits"}},
	{ResponseOutputItemAdded{ResponseID: "resp_1", Item: assistantNew}, "response.output_item.added", "response.output_item.added", []string{"response_id", "output_index", "item"}},
	{ResponseContentPartAdded{ResponseID: "resp_1", ItemID: "item_A", Part: ContentPart{Type: OutputAudio}}, "response.content_part.added", "response.content_part.added", []string{"response_id", "item_id", "output_index", "content_index", "part"}},
	{ResponseAudioTranscriptDelta{ref, "Hello"}, "response.audio_transcript.delta", "response.output_audio_transcript.delta", []string{"response_id", "item_id", "output_index", "content_index", "delta"}},
	{ResponseAudioDelta{ref, []byte{0, 1, 2, 3}}, "response.audio.delta", "response.output_audio.delta", []string{"response_id", "item_id", "output_index", "content_index", "delta"}},
	{ResponseAudioDone{ref}, "response.audio.done", "response.output_audio.done", []string{"response_id", "item_id", "output_index", "content_index"}},
	{ResponseAudioTranscriptDone{ref, "Hello there."}, "response.audio_transcript.done", "response.output_audio_transcript.done", []string{"response_id", "item_id", "output_index", "content_index", "transcript"}},
	{ResponseTextDelta{ref, "Hi"}, "response.text.delta", "response.output_text.delta", []string{"response_id", "item_id", "output_index", "content_index", "delta"}},
	{ResponseTextDone{ref, "Hi."}, "response.text.done", "response.output_text.done", []string{"response_id", "item_id", "output_index", "content_index", "text"}},
	{ResponseContentPartDone{ResponseID: "resp_1", ItemID: "item_A", Part: ContentPart{Type: OutputText, Text: "Hi."}}, "response.content_part.done", "response.content_part.done", []string{"response_id", "item_id", "output_index", "content_index", "part"}},
	{ResponseFunctionCallArgumentsDelta{ResponseID: "resp_1", ItemID: "item_F", OutputIndex: 1, CallID: "call_1", Delta: `{"ci`}, "response.function_call_arguments.delta", "response.function_call_arguments.delta", []string{"response_id", "item_id", "output_index", "call_id", "delta"}},
	{ResponseFunctionCallArgumentsDone{ResponseID: "resp_1", ItemID: "item_F", OutputIndex: 1, CallID: "call_1", Name: "get_weather", Arguments: `{"city":"Oslo"}`}, "response.function_call_arguments.done", "response.function_call_arguments.done", []string{"response_id", "item_id", "output_index", "call_id", "name", "arguments"}},
	{ResponseOutputItemDone{ResponseID: "resp_1", Item: assistantEnd}, "response.output_item.done", "response.output_item.done", []string{"response_id", "output_index", "item"}},
	{ResponseDone{doneResponse()}, "response.done", "response.done", []string{"response"}},
	{OutputAudioBufferCleared{ResponseID: "resp_1"}, "output_audio_buffer.cleared", "output_audio_buffer.cleared", []string{"response_id"}},
	{OutputAudioBufferStarted{ResponseID: "resp_1"}, "output_audio_buffer.started", "output_audio_buffer.started", []string{"response_id"}},
	{OutputAudioBufferStopped{ResponseID: "resp_1"}, "output_audio_buffer.stopped", "output_audio_buffer.stopped", []string{"response_id"}},
}

var eventIDPattern = regexp.MustCompile(`^event_[1-9A-HJ-NP-Za-km-z]{21}$`)

func encodeMap(t *testing.T, e *Encoder, ev ServerEvent) (map[string]any, []byte) {
	t.Helper()
	b, err := e.Encode(ev)
	if err != nil {
		t.Fatalf("Encode(%T): %v", ev, err)
	}
	if b == nil {
		return nil, nil
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("invalid JSON %s: %v", b, err)
	}
	return m, b
}

func TestEncodeNamesAndEnvelope(t *testing.T) {
	t.Parallel()
	for _, d := range []Dialect{Beta, GA} {
		e := NewEncoder(d)
		seen := map[string]bool{}
		for _, se := range serverEvents {
			want := se.ga
			if d == Beta {
				want = se.beta
			}
			m, b := encodeMap(t, e, se.ev)
			if want == "" {
				if b != nil {
					t.Errorf("%v: %T has no %v name but encoded %s", d, se.ev, d, b)
				}
				continue
			}
			if m["type"] != want {
				t.Errorf("%v: %T type %v, want %s", d, se.ev, m["type"], want)
			}
			id, _ := m["event_id"].(string)
			if !eventIDPattern.MatchString(id) || seen[id] {
				t.Errorf("%v: event_id %q not fresh event_+21", d, id)
			}
			seen[id] = true
		}
	}
}

// The beta names are what go-openai-realtime v0.6.1 (a beta client) reads:
// every beta event must pass its UnmarshalServerEvent, keeping its values.
func TestBetaEventsParseWithGoOpenAIRealtime(t *testing.T) {
	t.Parallel()
	e := NewEncoder(Beta)
	notInV061 := map[string]bool{"conversation.item.retrieved": true, "output_audio_buffer.cleared": true,
		"output_audio_buffer.started": true, "output_audio_buffer.stopped": true} // WebRTC only: never on its socket
	for _, se := range serverEvents {
		if se.beta == "" || notInV061[se.beta] {
			continue
		}
		t.Run(se.beta, func(t *testing.T) {
			_, b := encodeMap(t, e, se.ev)
			got, err := openairt.UnmarshalServerEvent(b)
			if err != nil {
				t.Fatalf("v0.6.1 refused %s: %v", b, err)
			}
			if string(got.ServerEventType()) != se.beta {
				t.Errorf("type %s", got.ServerEventType())
			}
		})
	}
	// conversation.item.retrieved has the shape of conversation.item.created (docs §11.4).
	_, b := encodeMap(t, e, ConversationItemRetrieved{Item: userAudio})
	var retrieved openairt.ConversationItemCreatedEvent
	if err := json.Unmarshal(b, &retrieved); err != nil || retrieved.Item.ID != "item_U" || retrieved.EventID == "" {
		t.Errorf("retrieved %s: %v %+v", b, err, retrieved)
	}
}

func TestBetaValuesSurviveGoOpenAIRealtime(t *testing.T) {
	t.Parallel()
	e := NewEncoder(Beta)
	_, b := encodeMap(t, e, SessionUpdated{testSession()})
	ev, err := openairt.UnmarshalServerEvent(b)
	if err != nil {
		t.Fatal(err)
	}
	s := ev.(openairt.SessionUpdatedEvent).Session
	if s.ID != "sess_1" || s.Voice != "alloy" || s.TurnDetection == nil || s.TurnDetection.Type != "server_vad" ||
		!s.ToolChoice.IsFunction() || s.ToolChoice.Function.Function.Name != "get_weather" || !s.MaxOutputTokens.IsInf() ||
		s.InputAudioTranscription == nil || len(s.Tools) != 1 {
		t.Errorf("session read back as %+v", s)
	}
	off := testSession()
	off.TurnDetection = TurnDetection{}
	off.ToolChoice = ToolChoice{Mode: ToolChoiceRequired}
	_, b = encodeMap(t, e, SessionUpdated{off})
	ev, _ = openairt.UnmarshalServerEvent(b)
	if s := ev.(openairt.SessionUpdatedEvent).Session; s.TurnDetection != nil || s.ToolChoice.String != "required" {
		t.Errorf("off session read back as %+v", s)
	}

	_, b = encodeMap(t, e, ResponseAudioDelta{ref, []byte{0, 1, 2, 3}})
	ev, _ = openairt.UnmarshalServerEvent(b)
	if d := ev.(openairt.ResponseAudioDeltaEvent); d.Delta != base64.StdEncoding.EncodeToString([]byte{0, 1, 2, 3}) || d.ItemID != "item_A" {
		t.Errorf("audio delta %+v", d)
	}

	_, b = encodeMap(t, e, ResponseDone{doneResponse()})
	ev, _ = openairt.UnmarshalServerEvent(b)
	r := ev.(openairt.ResponseDoneEvent).Response
	if r.Status != "cancelled" || len(r.Output) != 2 || r.Output[0].Content[0].Transcript != "Hello there." ||
		r.Output[0].Content[0].Type != "audio" || r.Usage == nil || r.Usage.TotalTokens != 13 {
		t.Errorf("response %+v", r)
	}

	_, b = encodeMap(t, e, ErrCommitEmpty(0, "evt_c"))
	ev, _ = openairt.UnmarshalServerEvent(b)
	if er := ev.(openairt.ErrorEvent).Error; er.Code != CodeCommitEmpty || er.EventID != "evt_c" || er.Type != TypeInvalidRequest {
		t.Errorf("error %+v", er)
	}
}

// GA events carry every field openai-python's GA models require (agents-python
// drops an event that lacks one).
func TestGAEventsCarryRequiredFields(t *testing.T) {
	t.Parallel()
	e := NewEncoder(GA)
	itemRequired := map[string][]string{
		"message":              {"type", "role", "content"},
		"function_call":        {"type", "name", "arguments"},
		"function_call_output": {"type", "call_id", "output"},
	}
	checkItem := func(t *testing.T, where string, item any) {
		it, ok := item.(map[string]any)
		if !ok {
			t.Fatalf("%s: item %v", where, item)
		}
		for _, k := range itemRequired[it["type"].(string)] {
			if _, ok := it[k]; !ok {
				t.Errorf("%s: item lacks %s: %v", where, k, it)
			}
		}
		for _, c := range asList(it["content"]) {
			switch typ := c.(map[string]any)["type"]; typ {
			case "text", "audio":
				t.Errorf("%s: GA content type %v", where, typ)
			}
		}
	}
	for _, se := range serverEvents {
		if se.ga == "" {
			continue
		}
		t.Run(se.ga, func(t *testing.T) {
			m, b := encodeMap(t, e, se.ev)
			for _, k := range append([]string{"type", "event_id"}, se.gaRequired...) {
				if _, ok := m[k]; !ok {
					t.Errorf("lacks %s: %s", k, b)
				}
			}
			if it, ok := m["item"]; ok {
				checkItem(t, se.ga, it)
			}
			if r, ok := m["response"].(map[string]any); ok {
				for _, it := range asList(r["output"]) {
					checkItem(t, se.ga+" output", it)
				}
				if r["object"] != "realtime.response" {
					t.Errorf("response object %v", r["object"])
				}
			}
			if s, ok := m["session"].(map[string]any); ok {
				if s["type"] != "realtime" && s["type"] != "transcription" || s["id"] == "" {
					t.Errorf("GA session needs type and id: %s", b)
				}
			}
			if er, ok := m["error"].(map[string]any); ok && (er["type"] == nil || er["message"] == nil) {
				t.Errorf("error lacks type/message: %s", b)
			}
		})
	}
}

func asList(v any) []any { l, _ := v.([]any); return l }

var eventIDField = regexp.MustCompile(`"event_id":"event_[^"]+"`)

// Exact JSON for the rules clients break on: [] / "" / null, part types,
// tool_choice, interrupt_response.
func TestGoldenJSON(t *testing.T) {
	t.Parallel()
	text := Item{ID: "item_T", Type: ItemMessage, Status: ItemCompleted, Role: RoleAssistant, Content: []ContentPart{{Type: OutputText, Text: "Hi."}}}
	transcribed := userAudio
	transcribed.Content = []ContentPart{{Type: InputAudio, Transcript: new("hello")}}
	tests := []struct {
		name string
		d    Dialect
		ev   ServerEvent
		want string
	}{
		{"beta assistant item starts with content []", Beta, ConversationItemAdded{PreviousItemID: "item_U", Item: assistantNew},
			`{"type":"conversation.item.created","event_id":"E","previous_item_id":"item_U","item":{"id":"item_A","object":"realtime.item","type":"message","status":"in_progress","role":"assistant","content":[]}}`},
		{"GA user audio transcript null, audio bytes not sent", GA, ConversationItemAdded{Item: userAudio},
			`{"type":"conversation.item.added","event_id":"E","previous_item_id":null,"item":{"id":"item_U","object":"realtime.item","type":"message","status":"completed","role":"user","content":[{"type":"input_audio","transcript":null}]}}`},
		{"transcribed user audio", GA, ConversationItemDone{Item: transcribed},
			`{"type":"conversation.item.done","event_id":"E","previous_item_id":null,"item":{"id":"item_U","object":"realtime.item","type":"message","status":"completed","role":"user","content":[{"type":"input_audio","transcript":"hello"}]}}`},
		{"retrieved carries audio", Beta, ConversationItemRetrieved{Item: userAudio},
			`{"type":"conversation.item.retrieved","event_id":"E","item":{"id":"item_U","object":"realtime.item","type":"message","status":"completed","role":"user","content":[{"type":"input_audio","audio":"AQI=","transcript":null}]}}`},
		{"function call arguments empty string", GA, ResponseOutputItemAdded{ResponseID: "resp_1", OutputIndex: 1, Item: callItem},
			`{"type":"response.output_item.added","event_id":"E","response_id":"resp_1","output_index":1,"item":{"id":"item_F","object":"realtime.item","type":"function_call","status":"in_progress","call_id":"call_1","name":"get_weather","arguments":""}}`},
		{"function call output empty string", Beta, ConversationItemAdded{Item: Item{ID: "item_O", Type: ItemFunctionCallOutput, CallID: "call_1"}},
			`{"type":"conversation.item.created","event_id":"E","previous_item_id":null,"item":{"id":"item_O","object":"realtime.item","type":"function_call_output","call_id":"call_1","output":""}}`},
		{"audio part starts with transcript empty", GA, ResponseContentPartAdded{ResponseID: "resp_1", ItemID: "item_A", Part: ContentPart{Type: OutputAudio}},
			`{"type":"response.content_part.added","event_id":"E","response_id":"resp_1","item_id":"item_A","output_index":0,"content_index":0,"part":{"type":"audio","transcript":""}}`},
		{"text part starts with text empty", Beta, ResponseContentPartAdded{ResponseID: "resp_1", ItemID: "item_T", Part: ContentPart{Type: OutputText}},
			`{"type":"response.content_part.added","event_id":"E","response_id":"resp_1","item_id":"item_T","output_index":0,"content_index":0,"part":{"type":"text","text":""}}`},
		{"GA final assistant content output_audio", GA, ResponseOutputItemDone{ResponseID: "resp_1", Item: assistantEnd},
			`{"type":"response.output_item.done","event_id":"E","response_id":"resp_1","output_index":0,"item":{"id":"item_A","object":"realtime.item","type":"message","status":"completed","role":"assistant","content":[{"type":"output_audio","transcript":"Hello there."}]}}`},
		{"beta final assistant content text", Beta, ResponseOutputItemDone{ResponseID: "resp_1", Item: text},
			`{"type":"response.output_item.done","event_id":"E","response_id":"resp_1","output_index":0,"item":{"id":"item_T","object":"realtime.item","type":"message","status":"completed","role":"assistant","content":[{"type":"text","text":"Hi."}]}}`},
		{"beta response.created output [] usage null", Beta, ResponseCreated{NewResponse("resp_1", "conv_1", NewSession("s", "m"))},
			`{"type":"response.created","event_id":"E","response":{"object":"realtime.response","id":"resp_1","status":"in_progress","status_details":null,"output":[],"conversation_id":"conv_1","modalities":["text","audio"],"voice":"alloy","output_audio_format":"pcm16","temperature":0.8,"max_output_tokens":"inf","usage":null,"metadata":null}}`},
		{"GA response.done cancelled by barge-in, usage with seconds", GA, ResponseDone{func() Response {
			r := NewResponse("resp_1", "conv_1", NewSession("s", "m"))
			r.Status, r.StatusDetails = ResponseCancelled, &StatusDetails{Type: ResponseCancelled, Reason: ReasonTurnDetected}
			r.Usage = &Usage{HeardSeconds: 1.5, SpokenSeconds: 0.75}
			return r
		}()},
			`{"type":"response.done","event_id":"E","response":{"object":"realtime.response","id":"resp_1","status":"cancelled","status_details":{"type":"cancelled","reason":"turn_detected"},"output":[],"conversation_id":"conv_1","output_modalities":["audio"],"max_output_tokens":"inf","audio":{"output":{"format":{"type":"audio/pcm","rate":24000},"voice":"alloy"}},"usage":{"total_tokens":0,"input_tokens":0,"output_tokens":0,"input_token_details":{"text_tokens":0,"audio_tokens":0,"image_tokens":0,"cached_tokens":0,"cached_tokens_details":{"text_tokens":0,"audio_tokens":0,"image_tokens":0}},"output_token_details":{"text_tokens":0,"audio_tokens":0},"heard_seconds":1.5,"spoken_seconds":0.75},"metadata":null}}`},
		{"transcription completed usage: tokens shape plus seconds", GA, InputAudioTranscriptionCompleted{ItemID: "item_U", Transcript: "Hello.", Seconds: 1.2},
			`{"type":"conversation.item.input_audio_transcription.completed","event_id":"E","item_id":"item_U","content_index":0,"transcript":"Hello.","usage":{"type":"tokens","total_tokens":0,"input_tokens":0,"input_token_details":{"text_tokens":0,"audio_tokens":0},"output_tokens":0,"seconds":1.2},"logprobs":null}`},
		{"transcription failed: no nulls in its error", GA, InputAudioTranscriptionFailed{ItemID: "item_U", Error: ErrServer("decoder failed", "")},
			`{"type":"conversation.item.input_audio_transcription.failed","event_id":"E","item_id":"item_U","content_index":0,"error":{"type":"server_error","code":"server_error","message":"decoder failed"}}`},
		{"committed first item previous null", Beta, InputAudioBufferCommitted{ItemID: "item_U"},
			`{"type":"input_audio_buffer.committed","event_id":"E","previous_item_id":null,"item_id":"item_U"}`},
		{"error with null param", GA, ErrActiveResponse("resp_1", "evt_2"),
			`{"type":"error","event_id":"E","error":{"type":"invalid_request_error","code":"conversation_already_has_active_response","message":"Conversation already has an active response in progress: resp_1. Wait until the response is finished before creating a new one.","param":null,"event_id":"evt_2"}}`},
		{"GA session: type, interrupt_response explicit, function tool_choice", GA, SessionUpdated{func() Session {
			s := NewSession("sess_1", "gpt-realtime")
			s.Tools, s.ToolChoice = []Tool{{Type: "function", Name: "f", Description: "d"}}, ToolChoice{ToolChoiceFunction, "f"}
			s.TurnDetection = DefaultTurnDetection(TurnSemanticVAD)
			s.OutputFormat = G711Ulaw
			return s
		}()},
			`{"type":"session.updated","event_id":"E","session":{"type":"realtime","object":"realtime.session","id":"sess_1","model":"gpt-realtime","output_modalities":["audio"],"instructions":"","tools":[{"type":"function","name":"f","description":"d"}],"tool_choice":{"type":"function","name":"f"},"max_output_tokens":"inf","tracing":null,"truncation":"auto","prompt":null,"expires_at":0,"audio":{"input":{"format":{"type":"audio/pcm","rate":24000},"transcription":null,"noise_reduction":null,"turn_detection":{"type":"semantic_vad","eagerness":"auto","create_response":true,"interrupt_response":true}},"output":{"format":{"type":"audio/pcmu"},"voice":"alloy","speed":1}},"include":null}}`},
		{"beta session: turn detection off is null, text only", Beta, SessionUpdated{func() Session {
			s := NewSession("sess_1", "gpt-realtime")
			s.TurnDetection, s.TextOnly, s.MaxOutputTokens, s.InputFormat = TurnDetection{}, true, 4096, G711Alaw
			return s
		}()},
			`{"type":"session.updated","event_id":"E","session":{"id":"sess_1","object":"realtime.session","model":"gpt-realtime","expires_at":0,"modalities":["text"],"instructions":"","voice":"alloy","input_audio_format":"g711_alaw","output_audio_format":"pcm16","input_audio_transcription":null,"input_audio_noise_reduction":null,"turn_detection":null,"tools":[],"tool_choice":"auto","temperature":0.8,"max_response_output_tokens":4096,"speed":1,"tracing":null,"include":null}}`},
		{"beta function tool_choice readable both ways", Beta, SessionCreated{func() Session {
			s := NewSession("sess_1", "m")
			s.ToolChoice = ToolChoice{ToolChoiceFunction, "f"}
			return s
		}()}, ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := NewEncoder(tt.d).Encode(tt.ev)
			if err != nil {
				t.Fatal(err)
			}
			got := eventIDField.ReplaceAllString(string(b), `"event_id":"E"`)
			if tt.want == "" {
				if !strings.Contains(got, `"tool_choice":{"type":"function","name":"f","function":{"name":"f"}}`) {
					t.Errorf("tool_choice in %s", got)
				}
				return
			}
			if got != tt.want {
				t.Errorf("\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestEncoderSwitchesDialect(t *testing.T) {
	t.Parallel()
	e := NewEncoder(Beta)
	b1, _ := e.Encode(ResponseAudioDone{ref})
	e.SetDialect(GA)
	b2, _ := e.Encode(ResponseAudioDone{ref})
	if !bytes.Contains(b1, []byte(`"response.audio.done"`)) || !bytes.Contains(b2, []byte(`"response.output_audio.done"`)) || e.Dialect() != GA {
		t.Errorf("%s / %s", b1, b2)
	}
}

func TestTurnDetectionJSON(t *testing.T) {
	t.Parallel()
	idle := DefaultTurnDetection(TurnServerVAD)
	idle.IdleTimeoutMs = 5000
	tests := []struct {
		name string
		td   TurnDetection
		want string
	}{
		{"off is null", TurnDetection{}, `null`},
		{"server_vad defaults, idle timeout null", DefaultTurnDetection(TurnServerVAD),
			`{"type":"server_vad","threshold":0.5,"prefix_padding_ms":300,"silence_duration_ms":500,"idle_timeout_ms":null,"create_response":true,"interrupt_response":true}`},
		{"server_vad idle timeout", idle,
			`{"type":"server_vad","threshold":0.5,"prefix_padding_ms":300,"silence_duration_ms":500,"idle_timeout_ms":5000,"create_response":true,"interrupt_response":true}`},
		{"semantic_vad", TurnDetection{Type: TurnSemanticVAD, Eagerness: EagernessLow},
			`{"type":"semantic_vad","eagerness":"low","create_response":false,"interrupt_response":false}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.td.wire())
			if err != nil || string(b) != tt.want {
				t.Errorf("got %s %v\nwant %s", b, err, tt.want)
			}
		})
	}
}

// The read loop may switch the dialect while the writer encodes (run with -race).
func TestEncoderConcurrentDialectSwitch(t *testing.T) {
	t.Parallel()
	e := NewEncoder(Beta)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 200 {
			if _, err := e.Encode(ResponseAudioDelta{ref, []byte{1, 2}}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for i := range 200 {
		e.SetDialect(Dialect(i % 2))
	}
	<-done
}
