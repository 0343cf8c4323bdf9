package wire

import (
	"encoding/json"
	"fmt"
	"sync/atomic"
)

// ServerEvent is one server event, dialect-neutral: the session fills the
// fields, Encoder.Encode writes the JSON of the connection's dialect with
// "type" and a fresh "event_id". EventName is the type it carries in a
// dialect, "" when the dialect has no such event (Encode then writes nothing).
//
// An event handed to the writer must not be changed afterwards (it shares
// slices with its maker): build a fresh value per event.
type ServerEvent interface {
	EventName(d Dialect) string
	body(d Dialect) any
}

// Encoder writes server events for one connection. It is safe for
// concurrent use: the read loop may SetDialect (SessionUpdate.Redecide)
// while the writer encodes.
type Encoder struct {
	dialect atomic.Uint32
}

// NewEncoder returns an encoder speaking d.
func NewEncoder(d Dialect) *Encoder {
	e := &Encoder{}
	e.SetDialect(d)
	return e
}

// Dialect is the dialect events are written in.
func (e *Encoder) Dialect() Dialect { return Dialect(e.dialect.Load()) }

// SetDialect changes the dialect of the events encoded from now on.
func (e *Encoder) SetDialect(d Dialect) { e.dialect.Store(uint32(d)) }

// Encode returns the event's JSON text frame: {"type", "event_id", ...}.
// It returns nil, nil for an event the dialect does not have (GA-only
// conversation.item.done or input_audio_buffer.timeout_triggered on a beta
// connection): write nothing then.
func (e *Encoder) Encode(ev ServerEvent) ([]byte, error) {
	d := e.Dialect()
	name := ev.EventName(d)
	if name == "" {
		return nil, nil
	}
	body, err := json.Marshal(ev.body(d))
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", name, err)
	}
	id := NewID("event_")
	out := make([]byte, 0, len(body)+len(name)+len(id)+28)
	out = append(out, `{"type":"`...)
	out = append(out, name...)
	out = append(out, `","event_id":"`...)
	out = append(out, id...)
	out = append(out, '"')
	if len(body) > 2 { // body is a JSON object: splice its members in
		out = append(out, ',')
		out = append(out, body[1:]...)
	} else {
		out = append(out, '}')
	}
	return out, nil
}

// pick returns the beta or GA name.
func pick(d Dialect, beta, ga string) string {
	if d == Beta {
		return beta
	}
	return ga
}

// nullString renders "" as JSON null (previous_item_id of the first item).
func nullString(s string) *string { return nullable(s) }

// ---- error ----

// EventName of an error event is "error"; a *Error encodes as one.
func (e *Error) EventName(Dialect) string { return "error" }

func (e *Error) body(Dialect) any {
	return struct {
		Error *Error `json:"error"`
	}{e}
}

// ---- session ----

// SessionCreated is the first event of every connection
// (beta transcription sessions: transcription_session.created).
type SessionCreated struct{ Session Session }

func (ev SessionCreated) EventName(d Dialect) string {
	if d == Beta && ev.Session.Type == SessionTranscription {
		return "transcription_session.created"
	}
	return "session.created"
}

func (ev SessionCreated) body(d Dialect) any { return sessionBody{ev.Session.wire(d)} }

// SessionUpdated answers an accepted session.update with the full effective
// config (beta transcription sessions: transcription_session.updated).
type SessionUpdated struct{ Session Session }

func (ev SessionUpdated) EventName(d Dialect) string {
	if d == Beta && ev.Session.Type == SessionTranscription {
		return "transcription_session.updated"
	}
	return "session.updated"
}

func (ev SessionUpdated) body(d Dialect) any { return sessionBody{ev.Session.wire(d)} }

type sessionBody struct {
	Session any `json:"session"`
}

// ConversationCreated is optional (documented, not seen in captures).
type ConversationCreated struct{ ConversationID string }

func (ConversationCreated) EventName(Dialect) string { return "conversation.created" }

func (ev ConversationCreated) body(Dialect) any {
	type conv struct {
		ID     string `json:"id"`
		Object string `json:"object"`
	}
	return struct {
		Conversation conv `json:"conversation"`
	}{conv{ev.ConversationID, "realtime.conversation"}}
}

// ---- input audio buffer ----

// InputAudioBufferSpeechStarted: VAD heard speech start. AudioStartMs
// counts from the session's first appended audio and includes the prefix
// padding; ItemID is the user item the turn will become.
type InputAudioBufferSpeechStarted struct {
	AudioStartMs int64  `json:"audio_start_ms"`
	ItemID       string `json:"item_id"`
}

func (InputAudioBufferSpeechStarted) EventName(Dialect) string {
	return "input_audio_buffer.speech_started"
}
func (ev InputAudioBufferSpeechStarted) body(Dialect) any { return ev }

// InputAudioBufferSpeechStopped: VAD found the end of speech.
type InputAudioBufferSpeechStopped struct {
	AudioEndMs int64  `json:"audio_end_ms"`
	ItemID     string `json:"item_id"`
}

func (InputAudioBufferSpeechStopped) EventName(Dialect) string {
	return "input_audio_buffer.speech_stopped"
}
func (ev InputAudioBufferSpeechStopped) body(Dialect) any { return ev }

// InputAudioBufferCommitted: the buffer became user item ItemID, after
// PreviousItemID ("" is sent as null: the first item).
type InputAudioBufferCommitted struct {
	PreviousItemID string
	ItemID         string
}

func (InputAudioBufferCommitted) EventName(Dialect) string { return "input_audio_buffer.committed" }

func (ev InputAudioBufferCommitted) body(Dialect) any {
	return struct {
		PreviousItemID *string `json:"previous_item_id"`
		ItemID         string  `json:"item_id"`
	}{nullString(ev.PreviousItemID), ev.ItemID}
}

// InputAudioBufferCleared answers input_audio_buffer.clear.
type InputAudioBufferCleared struct{}

func (InputAudioBufferCleared) EventName(Dialect) string { return "input_audio_buffer.cleared" }
func (InputAudioBufferCleared) body(Dialect) any         { return struct{}{} }

// InputAudioBufferTimeoutTriggered (GA only): idle_timeout_ms passed without speech.
type InputAudioBufferTimeoutTriggered struct {
	AudioStartMs int64  `json:"audio_start_ms"`
	AudioEndMs   int64  `json:"audio_end_ms"`
	ItemID       string `json:"item_id"`
}

func (InputAudioBufferTimeoutTriggered) EventName(d Dialect) string {
	return pick(d, "", "input_audio_buffer.timeout_triggered")
}
func (ev InputAudioBufferTimeoutTriggered) body(Dialect) any { return ev }

// ---- conversation items ----

type itemEventBody struct {
	PreviousItemID *string `json:"previous_item_id"`
	Item           any     `json:"item"`
}

// ConversationItemAdded announces an item: beta conversation.item.created,
// GA conversation.item.added. Send it for every item (user, assistant at
// its start with Status in_progress and no content, function call) before
// any event naming the item.
type ConversationItemAdded struct {
	PreviousItemID string // "" is sent as null
	Item           Item
}

func (ConversationItemAdded) EventName(d Dialect) string {
	return pick(d, "conversation.item.created", "conversation.item.added")
}

func (ev ConversationItemAdded) body(d Dialect) any {
	return itemEventBody{nullString(ev.PreviousItemID), ev.Item.wire(d, false)}
}

// ConversationItemDone (GA only; nothing on beta): the item is final —
// at once for user items, after response.output_item.done for assistant ones.
type ConversationItemDone struct {
	PreviousItemID string
	Item           Item
}

func (ConversationItemDone) EventName(d Dialect) string {
	return pick(d, "", "conversation.item.done")
}

func (ev ConversationItemDone) body(d Dialect) any {
	return itemEventBody{nullString(ev.PreviousItemID), ev.Item.wire(d, false)}
}

// ConversationItemRetrieved answers conversation.item.retrieve; the only
// event that carries audio bytes (content[].audio).
type ConversationItemRetrieved struct{ Item Item }

func (ConversationItemRetrieved) EventName(Dialect) string { return "conversation.item.retrieved" }

func (ev ConversationItemRetrieved) body(d Dialect) any {
	return struct {
		Item any `json:"item"`
	}{ev.Item.wire(d, true)}
}

// ConversationItemTruncated answers conversation.item.truncate.
type ConversationItemTruncated struct {
	ItemID       string `json:"item_id"`
	ContentIndex int    `json:"content_index"`
	AudioEndMs   int    `json:"audio_end_ms"`
}

func (ConversationItemTruncated) EventName(Dialect) string { return "conversation.item.truncated" }
func (ev ConversationItemTruncated) body(Dialect) any      { return ev }
func (ConversationItemDeleted) EventName(Dialect) string   { return "conversation.item.deleted" }
func (ev ConversationItemDeleted) body(Dialect) any        { return ev }
func (InputAudioTranscriptionDelta) EventName(Dialect) string {
	return "conversation.item.input_audio_transcription.delta"
}

// ConversationItemDeleted answers conversation.item.delete.
type ConversationItemDeleted struct {
	ItemID string `json:"item_id"`
}

// InputAudioTranscriptionDelta streams the user item's transcript.
type InputAudioTranscriptionDelta struct {
	ItemID       string
	ContentIndex int
	Delta        string
	Logprobs     []Logprob // nil: null (the session's include[] does not name IncludeLogprobs)
}

func (ev InputAudioTranscriptionDelta) body(Dialect) any {
	return struct {
		ItemID       string `json:"item_id"`
		ContentIndex int    `json:"content_index"`
		Delta        string `json:"delta"`
		Logprobs     any    `json:"logprobs"`
	}{ev.ItemID, ev.ContentIndex, ev.Delta, logprobsWire(ev.Logprobs)}
}

// InputAudioTranscriptionCompleted carries the user item's transcript.
// Seconds is the audio transcribed. Its usage is written as
// {type:"tokens", total_tokens, input_tokens, input_token_details{text_tokens,
// audio_tokens}, output_tokens, seconds}: openai-python accepts "tokens" or
// "duration", but agents-js 0.3.7 validates usage as "tokens" only and
// silently drops the event otherwise (checked with its zod schema), so the
// seconds ride along as an extra field.
type InputAudioTranscriptionCompleted struct {
	ItemID           string
	ContentIndex     int
	Transcript       string
	Seconds          float64
	InputAudioTokens int // estimates, 0 when unknown
	OutputTextTokens int
	// Logprobs: the transcript's tokens with the decoder's log-probabilities, when the session's
	// include[] names IncludeLogprobs; nil: null.
	Logprobs []Logprob
	// Language is voiced's extra field (omitted when empty): the language the transcript was
	// detected in when the session's language is auto (OpenAI's event has no field for it;
	// clients ignore one they do not know).
	Language string
}

func (InputAudioTranscriptionCompleted) EventName(Dialect) string {
	return "conversation.item.input_audio_transcription.completed"
}

type transcriptionUsageJSON struct {
	Type              string            `json:"type"`
	TotalTokens       int               `json:"total_tokens"`
	InputTokens       int               `json:"input_tokens"`
	InputTokenDetails outputDetailsJSON `json:"input_token_details"`
	OutputTokens      int               `json:"output_tokens"`
	Seconds           float64           `json:"seconds"`
}

func (ev InputAudioTranscriptionCompleted) body(Dialect) any {
	return struct {
		ItemID       string                 `json:"item_id"`
		ContentIndex int                    `json:"content_index"`
		Transcript   string                 `json:"transcript"`
		Usage        transcriptionUsageJSON `json:"usage"`
		Logprobs     any                    `json:"logprobs"`
		Language     string                 `json:"language,omitempty"`
	}{ev.ItemID, ev.ContentIndex, ev.Transcript, transcriptionUsageJSON{
		Type: "tokens", TotalTokens: ev.InputAudioTokens + ev.OutputTextTokens, InputTokens: ev.InputAudioTokens,
		InputTokenDetails: outputDetailsJSON{AudioTokens: ev.InputAudioTokens}, OutputTokens: ev.OutputTextTokens,
		Seconds: ev.Seconds,
	}, logprobsWire(ev.Logprobs), ev.Language}
}

// InputAudioTranscriptionFailed reports a failed transcription (not an
// error event). Its error omits empty fields: agents-js wants strings or
// nothing there, not null.
type InputAudioTranscriptionFailed struct {
	ItemID       string
	ContentIndex int
	Error        *Error
}

func (InputAudioTranscriptionFailed) EventName(Dialect) string {
	return "conversation.item.input_audio_transcription.failed"
}

func (ev InputAudioTranscriptionFailed) body(Dialect) any {
	e := ev.Error
	if e == nil {
		e = &Error{Type: TypeServer, Code: CodeServerError, Message: "Input transcription failed."}
	}
	type errorJSON struct {
		Type    string `json:"type"`
		Code    string `json:"code,omitempty"`
		Message string `json:"message"`
		Param   string `json:"param,omitempty"`
	}
	return struct {
		ItemID       string    `json:"item_id"`
		ContentIndex int       `json:"content_index"`
		Error        errorJSON `json:"error"`
	}{ev.ItemID, ev.ContentIndex, errorJSON{e.Type, e.Code, e.Message, e.Param}}
}

// ---- responses ----

// Response is the response object of response.created / response.done.
type Response struct {
	ID             string // NewID("resp_")
	Status         string // Response* constants
	StatusDetails  *StatusDetails
	Output         []Item // sent as [] when empty; audio bytes never sent
	ConversationID string // "" is sent as null (out-of-band responses)
	Metadata       map[string]string

	// The configuration it runs with (Session.ForResponse).
	TextOnly        bool
	Voice           string
	OutputFormat    AudioFormat
	Temperature     float64
	MaxOutputTokens int // 0 = "inf"

	Usage *Usage // nil is sent as null (response.created)
}

// NewResponse starts a response in_progress with cfg's output settings.
func NewResponse(id, conversationID string, cfg Session) Response {
	return Response{
		ID: id, Status: ResponseInProgress, ConversationID: conversationID,
		TextOnly: cfg.TextOnly, Voice: cfg.Voice, OutputFormat: cfg.OutputFormat,
		Temperature: cfg.Temperature, MaxOutputTokens: cfg.MaxOutputTokens,
	}
}

type betaResponseJSON struct {
	Object            string            `json:"object"`
	ID                string            `json:"id"`
	Status            string            `json:"status"`
	StatusDetails     *StatusDetails    `json:"status_details"`
	Output            []any             `json:"output"`
	ConversationID    *string           `json:"conversation_id"`
	Modalities        []string          `json:"modalities"`
	Voice             string            `json:"voice"`
	OutputAudioFormat string            `json:"output_audio_format"`
	Temperature       float64           `json:"temperature"`
	MaxOutputTokens   any               `json:"max_output_tokens"`
	Usage             *usageJSON        `json:"usage"`
	Metadata          map[string]string `json:"metadata"`
}

type gaResponseAudioJSON struct {
	Output struct {
		Format any    `json:"format"`
		Voice  string `json:"voice"`
	} `json:"output"`
}

type gaResponseJSON struct {
	Object           string              `json:"object"`
	ID               string              `json:"id"`
	Status           string              `json:"status"`
	StatusDetails    *StatusDetails      `json:"status_details"`
	Output           []any               `json:"output"`
	ConversationID   *string             `json:"conversation_id"`
	OutputModalities []string            `json:"output_modalities"`
	MaxOutputTokens  any                 `json:"max_output_tokens"`
	Audio            gaResponseAudioJSON `json:"audio"`
	Usage            *usageJSON          `json:"usage"`
	Metadata         map[string]string   `json:"metadata"`
}

func (r *Response) wire(d Dialect) any {
	out := make([]any, len(r.Output))
	for i, it := range r.Output {
		out[i] = it.wire(d, false)
	}
	status := r.Status
	if status == "" {
		status = ResponseInProgress
	}
	if d == Beta {
		return betaResponseJSON{
			Object: "realtime.response", ID: r.ID, Status: status, StatusDetails: r.StatusDetails, Output: out,
			ConversationID: nullString(r.ConversationID), Modalities: modalitiesWire(r.TextOnly, Beta), Voice: r.Voice,
			OutputAudioFormat: r.OutputFormat.String(), Temperature: r.Temperature,
			MaxOutputTokens: maxTokensWire(r.MaxOutputTokens), Usage: r.Usage.wire(), Metadata: r.Metadata,
		}
	}
	g := gaResponseJSON{
		Object: "realtime.response", ID: r.ID, Status: status, StatusDetails: r.StatusDetails, Output: out,
		ConversationID: nullString(r.ConversationID), OutputModalities: modalitiesWire(r.TextOnly, GA),
		MaxOutputTokens: maxTokensWire(r.MaxOutputTokens), Usage: r.Usage.wire(), Metadata: r.Metadata,
	}
	g.Audio.Output.Format, g.Audio.Output.Voice = r.OutputFormat.wire(GA), r.Voice
	return g
}

type responseBody struct {
	Response any `json:"response"`
}

// ResponseCreated is the first event of each response (Status in_progress, no output yet).
type ResponseCreated struct{ Response Response }

func (ResponseCreated) EventName(Dialect) string { return "response.created" }
func (ev ResponseCreated) body(d Dialect) any    { return responseBody{ev.Response.wire(d)} }

// ResponseDone is the last event of each response, whatever its outcome:
// completed, cancelled {type:"cancelled", reason:"turn_detected"|"client_cancelled"},
// incomplete, failed {type:"failed", error}.
type ResponseDone struct{ Response Response }

func (ResponseDone) EventName(Dialect) string { return "response.done" }
func (ev ResponseDone) body(d Dialect) any    { return responseBody{ev.Response.wire(d)} }

// RateLimitsUpdated follows response.created.
type RateLimitsUpdated struct{ RateLimits []RateLimit }

func (RateLimitsUpdated) EventName(Dialect) string { return "rate_limits.updated" }

func (ev RateLimitsUpdated) body(Dialect) any {
	limits := ev.RateLimits
	if limits == nil {
		limits = []RateLimit{}
	}
	return struct {
		RateLimits []RateLimit `json:"rate_limits"`
	}{limits}
}

type outputItemBody struct {
	ResponseID  string `json:"response_id"`
	OutputIndex int    `json:"output_index"`
	Item        any    `json:"item"`
}

// ResponseOutputItemAdded: a response starts an item (in_progress, no content yet).
type ResponseOutputItemAdded struct {
	ResponseID  string
	OutputIndex int
	Item        Item
}

func (ResponseOutputItemAdded) EventName(Dialect) string { return "response.output_item.added" }
func (ev ResponseOutputItemAdded) body(d Dialect) any {
	return outputItemBody{ev.ResponseID, ev.OutputIndex, ev.Item.wire(d, false)}
}

// ResponseOutputItemDone: the item is final (also on cancel: Status incomplete).
type ResponseOutputItemDone struct {
	ResponseID  string
	OutputIndex int
	Item        Item
}

func (ResponseOutputItemDone) EventName(Dialect) string { return "response.output_item.done" }
func (ev ResponseOutputItemDone) body(d Dialect) any {
	return outputItemBody{ev.ResponseID, ev.OutputIndex, ev.Item.wire(d, false)}
}

type contentPartBody struct {
	ResponseID   string      `json:"response_id"`
	ItemID       string      `json:"item_id"`
	OutputIndex  int         `json:"output_index"`
	ContentIndex int         `json:"content_index"`
	Part         contentJSON `json:"part"`
}

// ResponseContentPartAdded: a message part starts. Part is written as
// {type:"audio",transcript:""} or {type:"text",text:""} in both dialects.
type ResponseContentPartAdded struct {
	ResponseID   string
	ItemID       string
	OutputIndex  int
	ContentIndex int
	Part         ContentPart
}

func (ResponseContentPartAdded) EventName(Dialect) string { return "response.content_part.added" }
func (ev ResponseContentPartAdded) body(Dialect) any {
	return contentPartBody{ev.ResponseID, ev.ItemID, ev.OutputIndex, ev.ContentIndex, ev.Part.partWire()}
}

// ResponseContentPartDone: the part is final (its transcript or text complete).
type ResponseContentPartDone struct {
	ResponseID   string
	ItemID       string
	OutputIndex  int
	ContentIndex int
	Part         ContentPart
}

func (ResponseContentPartDone) EventName(Dialect) string { return "response.content_part.done" }
func (ev ResponseContentPartDone) body(Dialect) any {
	return contentPartBody{ev.ResponseID, ev.ItemID, ev.OutputIndex, ev.ContentIndex, ev.Part.partWire()}
}

// PartRef locates a content part: the fields every delta event carries.
type PartRef struct {
	ResponseID   string `json:"response_id"`
	ItemID       string `json:"item_id"`
	OutputIndex  int    `json:"output_index"`
	ContentIndex int    `json:"content_index"`
}

// ResponseTextDelta: beta response.text.delta, GA response.output_text.delta.
type ResponseTextDelta struct {
	PartRef
	Delta string `json:"delta"`
}

func (ResponseTextDelta) EventName(d Dialect) string {
	return pick(d, "response.text.delta", "response.output_text.delta")
}
func (ev ResponseTextDelta) body(Dialect) any { return ev }

// ResponseTextDone: beta response.text.done, GA response.output_text.done.
type ResponseTextDone struct {
	PartRef
	Text string `json:"text"`
}

func (ResponseTextDone) EventName(d Dialect) string {
	return pick(d, "response.text.done", "response.output_text.done")
}
func (ev ResponseTextDone) body(Dialect) any { return ev }

// ResponseAudioDelta: beta response.audio.delta, GA response.output_audio.delta.
// Delta is raw audio in the session's output format; it is written base64.
type ResponseAudioDelta struct {
	PartRef
	Delta []byte `json:"delta"`
}

func (ResponseAudioDelta) EventName(d Dialect) string {
	return pick(d, "response.audio.delta", "response.output_audio.delta")
}
func (ev ResponseAudioDelta) body(Dialect) any { return ev }

// ResponseAudioDone: beta response.audio.done, GA response.output_audio.done.
type ResponseAudioDone struct{ PartRef }

func (ResponseAudioDone) EventName(d Dialect) string {
	return pick(d, "response.audio.done", "response.output_audio.done")
}
func (ev ResponseAudioDone) body(Dialect) any { return ev.PartRef }

// ResponseAudioTranscriptDelta: beta response.audio_transcript.delta,
// GA response.output_audio_transcript.delta.
type ResponseAudioTranscriptDelta struct {
	PartRef
	Delta string `json:"delta"`
}

func (ResponseAudioTranscriptDelta) EventName(d Dialect) string {
	return pick(d, "response.audio_transcript.delta", "response.output_audio_transcript.delta")
}
func (ev ResponseAudioTranscriptDelta) body(Dialect) any { return ev }

// ResponseAudioTranscriptDone: beta response.audio_transcript.done,
// GA response.output_audio_transcript.done.
type ResponseAudioTranscriptDone struct {
	PartRef
	Transcript string `json:"transcript"`
}

func (ResponseAudioTranscriptDone) EventName(d Dialect) string {
	return pick(d, "response.audio_transcript.done", "response.output_audio_transcript.done")
}
func (ev ResponseAudioTranscriptDone) body(Dialect) any { return ev }

// ResponseFunctionCallArgumentsDelta streams a function call's arguments.
type ResponseFunctionCallArgumentsDelta struct {
	ResponseID  string `json:"response_id"`
	ItemID      string `json:"item_id"`
	OutputIndex int    `json:"output_index"`
	CallID      string `json:"call_id"`
	Delta       string `json:"delta"`
}

func (ResponseFunctionCallArgumentsDelta) EventName(Dialect) string {
	return "response.function_call_arguments.delta"
}
func (ev ResponseFunctionCallArgumentsDelta) body(Dialect) any { return ev }

// ResponseFunctionCallArgumentsDone: the arguments are complete.
type ResponseFunctionCallArgumentsDone struct {
	ResponseID  string `json:"response_id"`
	ItemID      string `json:"item_id"`
	OutputIndex int    `json:"output_index"`
	CallID      string `json:"call_id"`
	Name        string `json:"name"`
	Arguments   string `json:"arguments"`
}

func (ResponseFunctionCallArgumentsDone) EventName(Dialect) string {
	return "response.function_call_arguments.done"
}
func (ev ResponseFunctionCallArgumentsDone) body(Dialect) any { return ev }

// OutputAudioBufferCleared (WebRTC/SIP semantics): playback cut. Over a
// WebSocket the service never sends it, and go-openai-realtime v0.6.1
// does not know it: do not send it to WebSocket clients.
type OutputAudioBufferCleared struct {
	ResponseID string `json:"response_id"`
}

func (OutputAudioBufferCleared) EventName(Dialect) string { return "output_audio_buffer.cleared" }
func (ev OutputAudioBufferCleared) body(Dialect) any      { return ev }
