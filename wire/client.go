package wire

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Client event types.
const (
	TypeSessionUpdate              = "session.update"
	TypeTranscriptionSessionUpdate = "transcription_session.update" // beta
	TypeInputAudioBufferAppend     = "input_audio_buffer.append"
	TypeInputAudioBufferCommit     = "input_audio_buffer.commit"
	TypeInputAudioBufferClear      = "input_audio_buffer.clear"
	TypeConversationItemCreate     = "conversation.item.create"
	TypeConversationItemDelete     = "conversation.item.delete"
	TypeConversationItemTruncate   = "conversation.item.truncate"
	TypeConversationItemRetrieve   = "conversation.item.retrieve"
	TypeResponseCreate             = "response.create"
	TypeResponseCancel             = "response.cancel"
	TypeOutputAudioBufferClear     = "output_audio_buffer.clear"
)

var clientTypes = []string{
	TypeSessionUpdate, TypeTranscriptionSessionUpdate, TypeInputAudioBufferAppend, TypeInputAudioBufferCommit,
	TypeInputAudioBufferClear, TypeConversationItemCreate, TypeConversationItemDelete, TypeConversationItemTruncate,
	TypeConversationItemRetrieve, TypeResponseCreate, TypeResponseCancel, TypeOutputAudioBufferClear,
	TypeInputVideoBufferAppend, // voiced's extension (video.go)
}

// ClientEvent is one decoded client event: one of the pointer types
// *SessionUpdate, *InputAudioBufferAppend, *InputAudioBufferCommit,
// *InputAudioBufferClear, *ConversationItemCreate, *ConversationItemDelete,
// *ConversationItemTruncate, *ConversationItemRetrieve, *ResponseCreate,
// *ResponseCancel, *OutputAudioBufferClear, *InputVideoBufferAppend. Switch on the type.
type ClientEvent interface {
	// EventType is the event's "type" as sent.
	EventType() string
	// ClientEventID is the client's optional event_id ("" when absent), to
	// be echoed in error.event_id of an error the event causes.
	ClientEventID() string
}

// ClientHeader is the envelope every client event carries.
type ClientHeader struct {
	Type    string
	EventID string
}

func (h ClientHeader) EventType() string     { return h.Type }
func (h ClientHeader) ClientEventID() string { return h.EventID }

// SessionUpdate is session.update (both dialects) or the beta
// transcription_session.update (then Transcription is true and
// Session.Type is set to "transcription").
type SessionUpdate struct {
	ClientHeader
	// Shape is the dialect the session object's fields show: GA when
	// session.type, session.audio or session.output_modalities appear; Beta
	// when a flat beta field appears. ShapeKnown is false when only fields
	// common to both were sent (then Shape is the dialect decoded with).
	Shape      Dialect
	ShapeKnown bool
	// Transcription: the beta transcription_session.update event.
	Transcription bool
	Session       SessionPatch
}

// Redecide applies SPEC §6: the first session.update of a connection
// decides its dialect by its shape; later updates of the other shape are
// refused like the service does ("Unknown parameter: 'session.type'.").
// It returns the dialect the connection speaks from now on.
func (u *SessionUpdate) Redecide(current Dialect, first bool) (Dialect, error) {
	if !u.ShapeKnown || u.Shape == current {
		return current, nil
	}
	if first {
		return u.Shape, nil
	}
	return current, ErrUnknownParameter("session."+u.Session.marker, u.EventID)
}

// SessionType is a GA session.type.
type SessionType string

const (
	SessionRealtime      SessionType = "realtime"
	SessionTranscription SessionType = "transcription"
)

// SessionPatch is what one session.update sets, dialect-neutral. Fields
// absent from the event are not Present; Null marks an explicit null (turn
// detection, transcription, noise reduction off). Values are validated.
type SessionPatch struct {
	Type            Field[SessionType]   // GA session.type
	Model           Field[string]        // echoed, not switchable
	Instructions    Field[string]        // "" and null clear
	TextOnly        Field[bool]          // modalities / output_modalities without "audio"
	Voice           Field[string]        // audio.output.voice; GA {id} gives the id
	Speed           Field[float64]       // 0.25..1.5
	InputFormat     Field[AudioFormat]   // input_audio_format / audio.input.format
	OutputFormat    Field[AudioFormat]   // output_audio_format / audio.output.format
	TurnDetection   Field[TurnDetection] // null: off; a value has defaults filled
	Transcription   Field[Transcription] // null: off
	NoiseReduction  Field[string]        // near_field | far_field; null: off
	Tools           Field[[]Tool]        // [] clears
	ToolChoice      Field[ToolChoice]
	Temperature     Field[float64] // beta only, 0.6..1.2
	MaxOutputTokens Field[int]     // 1..4096, 0 = "inf"
	// ParallelToolCalls: whether the mind may make several calls in one answer (passed on).
	ParallelToolCalls Field[bool]
	// Truncation: how the history sent to the mind is kept under its budget.
	Truncation Field[Truncation]
	// voiced's own (room.go): voiced.echo_cancellation (null: the transport's default) and
	// voiced.interruption (null: every speech_started cancels).
	EchoCancellation Field[bool]
	Interruption     Field[Interruption]
	// Include: include[] (IncludeLogprobs); null or [] clears.
	Include Field[[]string]
	// Ignored lists the parameters accepted and not applied (tracing,
	// prompt, reasoning, client_secret), for the session to log
	// as a warning.
	Ignored []string

	marker string // the first field that showed the shape, for Redecide's error
}

// InputAudioBufferAppend is input_audio_buffer.append; Audio is already
// base64-decoded, in the session's input format (its length is not checked
// against the format: odd PCM16 lengths are the session's to refuse).
type InputAudioBufferAppend struct {
	ClientHeader
	Audio []byte
}

// InputAudioBufferCommit is input_audio_buffer.commit.
type InputAudioBufferCommit struct{ ClientHeader }

// InputAudioBufferClear is input_audio_buffer.clear.
type InputAudioBufferClear struct{ ClientHeader }

// ConversationItemCreate is conversation.item.create.
type ConversationItemCreate struct {
	ClientHeader
	// PreviousItemID: "" appends, "root" inserts at the start, an unknown
	// id is the session's to refuse (ErrItemNotFound("previous_item_id", ...)).
	PreviousItemID string
	Item           Item
}

// ConversationItemDelete is conversation.item.delete.
type ConversationItemDelete struct {
	ClientHeader
	ItemID string
}

// ConversationItemRetrieve is conversation.item.retrieve.
type ConversationItemRetrieve struct {
	ClientHeader
	ItemID string
}

// ConversationItemTruncate is conversation.item.truncate.
type ConversationItemTruncate struct {
	ClientHeader
	ItemID       string
	ContentIndex int
	AudioEndMs   int
}

// ResponseCreate is response.create.
type ResponseCreate struct {
	ClientHeader
	Response ResponseParams
}

// ResponseParams are the per-response overrides of response.create (both
// dialects' names accepted). Session.ForResponse merges them.
type ResponseParams struct {
	// Conversation: "auto" (default, written to the conversation) or "none"
	// (out of band).
	Conversation string
	Metadata     map[string]string
	// Input replaces the conversation as this response's context; its items
	// may be {Type: ItemReference, ID}.
	Input           Field[[]Item]
	Instructions    Field[string]
	TextOnly        Field[bool]
	Voice           Field[string]
	OutputFormat    Field[AudioFormat]
	Tools           Field[[]Tool]
	ToolChoice      Field[ToolChoice]
	Temperature     Field[float64]
	MaxOutputTokens Field[int]
	// ParallelToolCalls overrides the session's for this response.
	ParallelToolCalls Field[bool]
}

// ResponseCancel is response.cancel; ResponseID is optional.
type ResponseCancel struct {
	ClientHeader
	ResponseID string
}

// OutputAudioBufferClear is output_audio_buffer.clear (meaningful over
// WebRTC/SIP; over a WebSocket there is no server-side playback buffer).
type OutputAudioBufferClear struct{ ClientHeader }

// envelope reads every top-level field of every client event in one pass.
type envelope struct {
	Type           *string         `json:"type"`
	EventID        string          `json:"event_id"`
	Session        json.RawMessage `json:"session"`
	Audio          *string         `json:"audio"`
	Item           json.RawMessage `json:"item"`
	PreviousItemID *string         `json:"previous_item_id"`
	ItemID         *string         `json:"item_id"`
	ContentIndex   *int            `json:"content_index"`
	AudioEndMs     *int            `json:"audio_end_ms"`
	Response       json.RawMessage `json:"response"`
	ResponseID     *string         `json:"response_id"`
	Image          *string         `json:"image"` // input_video_buffer.append (video.go)
}

// Decode reads one client event (one WebSocket text frame) of dialect d.
// Every failure is a *Error (type invalid_request_error, with code, param,
// message and the event's event_id when it could be read), ready to send:
// the session stays open. A session.update is decoded in the shape its
// fields show, whatever d is (see SessionUpdate.Redecide).
func Decode(data []byte, d Dialect) (ClientEvent, error) {
	ev, err := decode(data, d)
	if err != nil {
		return nil, err // a non-nil *Error: never a typed nil in the interface
	}
	return ev, nil
}

// DecodeAppend is Decode's fast path alone: an input_audio_buffer.append in the flat shape every
// client sends, read without encoding/json (at base64's speed). ok is false for anything else,
// which DecodeGeneral reads. A caller that must bound what encoding/json reads (its CPU is
// ~20 times an append's per byte) calls the two in turn and charges the bytes in between.
func DecodeAppend(data []byte) (ev *InputAudioBufferAppend, ok bool) {
	return appendFast(data)
}

// DecodeGeneral is Decode without the fast path (for a caller that tried DecodeAppend first).
func DecodeGeneral(data []byte, d Dialect) (ClientEvent, error) {
	ev, err := decodeGeneral(data, d)
	if err != nil {
		return nil, err
	}
	return ev, nil
}

func decode(data []byte, d Dialect) (ClientEvent, *Error) {
	if ev, ok := appendFast(data); ok {
		return ev, nil
	}
	return decodeGeneral(data, d)
}

func decodeGeneral(data []byte, d Dialect) (ClientEvent, *Error) {
	var env envelope
	if err := json.Unmarshal(data, &env); err != nil {
		env.EventID = eventIDOf(env.EventID)
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			if typeErr.Field == "type" {
				return nil, invalidRequest(CodeInvalidType, "type", env.EventID,
					"Invalid type for 'type': expected a string, but got %s instead.", describeJSON(typeErr.Value))
			}
			return nil, invalidRequest(CodeInvalidType, typeErr.Field, env.EventID,
				"Invalid type for '%s': expected %s, but got %s instead.", typeErr.Field, describeGo(typeErr.Type.String()), describeJSON(typeErr.Value))
		}
		var syntaxErr *json.SyntaxError
		if errors.As(err, &syntaxErr) {
			return nil, ErrInvalidEvent("", fmt.Sprintf("We could not parse the JSON body of your request: invalid JSON at byte %d.", syntaxErr.Offset))
		}
		// A JSON value that is not an object (array, string, number).
		return nil, ErrInvalidEvent("", "The event must be a JSON object.")
	}
	if len(env.EventID) > MaxIDBytes {
		return nil, ErrStringTooLong("event_id", "", MaxIDBytes, len(env.EventID))
	}
	if env.Type == nil {
		return nil, ErrInvalidEvent(env.EventID, "The 'type' field is missing.")
	}
	h := ClientHeader{Type: *env.Type, EventID: env.EventID}
	for _, id := range []struct {
		param string
		v     *string
	}{{"previous_item_id", env.PreviousItemID}, {"item_id", env.ItemID}, {"response_id", env.ResponseID}} {
		if id.v != nil {
			if err := boundString(*id.v, id.param, h.EventID, MaxIDBytes); err != nil {
				return nil, err
			}
		}
	}
	switch h.Type {
	case TypeSessionUpdate, TypeTranscriptionSessionUpdate:
		return decodeSessionUpdate(h, env.Session, d)
	case TypeInputAudioBufferAppend:
		if env.Audio == nil {
			return nil, ErrMissingParameter("audio", h.EventID)
		}
		audio, err := decodeBase64(*env.Audio)
		if err != nil {
			return nil, ErrInvalidValue("audio", h.EventID, "Invalid 'audio': the audio must be base64-encoded (%v).", err)
		}
		return &InputAudioBufferAppend{ClientHeader: h, Audio: audio}, nil
	case TypeInputVideoBufferAppend:
		ev, err := decodeVideoAppend(h, env.Image)
		if err != nil {
			return nil, err
		}
		return ev, nil
	case TypeInputAudioBufferCommit:
		return &InputAudioBufferCommit{ClientHeader: h}, nil
	case TypeInputAudioBufferClear:
		return &InputAudioBufferClear{ClientHeader: h}, nil
	case TypeOutputAudioBufferClear:
		return &OutputAudioBufferClear{ClientHeader: h}, nil
	case TypeConversationItemCreate:
		if len(env.Item) == 0 || isNull(env.Item) {
			return nil, ErrMissingParameter("item", h.EventID)
		}
		item, err := decodeItem(env.Item, "item", d, h.EventID)
		if err != nil {
			return nil, err
		}
		if item.Type == ItemReference {
			return nil, ErrInvalidValue("item.type", h.EventID, "Invalid value: 'item_reference'. Supported values are: 'message', 'function_call', and 'function_call_output'.")
		}
		return &ConversationItemCreate{ClientHeader: h, PreviousItemID: deref(env.PreviousItemID), Item: item}, nil
	case TypeConversationItemDelete, TypeConversationItemRetrieve, TypeConversationItemTruncate:
		if env.ItemID == nil || *env.ItemID == "" {
			return nil, ErrMissingParameter("item_id", h.EventID)
		}
		switch h.Type {
		case TypeConversationItemDelete:
			return &ConversationItemDelete{ClientHeader: h, ItemID: *env.ItemID}, nil
		case TypeConversationItemRetrieve:
			return &ConversationItemRetrieve{ClientHeader: h, ItemID: *env.ItemID}, nil
		}
		if env.ContentIndex == nil {
			return nil, ErrMissingParameter("content_index", h.EventID)
		}
		if env.AudioEndMs == nil {
			return nil, ErrMissingParameter("audio_end_ms", h.EventID)
		}
		if *env.ContentIndex < 0 {
			return nil, ErrInvalidValue("content_index", h.EventID, "Invalid 'content_index': integer below minimum value. Expected a value >= 0, but got %d instead.", *env.ContentIndex)
		}
		if *env.AudioEndMs < 0 {
			return nil, ErrInvalidValue("audio_end_ms", h.EventID, "Invalid 'audio_end_ms': integer below minimum value. Expected a value >= 0, but got %d instead.", *env.AudioEndMs)
		}
		return &ConversationItemTruncate{ClientHeader: h, ItemID: *env.ItemID, ContentIndex: *env.ContentIndex, AudioEndMs: *env.AudioEndMs}, nil
	case TypeResponseCreate:
		params, err := decodeResponseParams(env.Response, d, h.EventID)
		if err != nil {
			return nil, err
		}
		return &ResponseCreate{ClientHeader: h, Response: params}, nil
	case TypeResponseCancel:
		return &ResponseCancel{ClientHeader: h, ResponseID: deref(env.ResponseID)}, nil
	case "":
		return nil, ErrInvalidEvent(h.EventID, "The 'type' field is missing.")
	default:
		return nil, ErrInvalidValue("type", h.EventID, "Invalid value: '%s'. Supported values are: %s.", clip(h.Type), quotedList(clientTypes))
	}
}

// DecodeSession reads a bare session object, as the HTTP ephemeral-key
// requests carry it (POST /v1/realtime/sessions: the beta flat object;
// POST /v1/realtime/client_secrets: its "session" member), with the rules of
// session.update: apply the result with Session.Apply. Errors are *Error.
func DecodeSession(raw json.RawMessage, d Dialect) (*SessionUpdate, error) {
	u, err := decodeSessionUpdate(ClientHeader{Type: TypeSessionUpdate}, raw, d)
	if err != nil {
		return nil, err
	}
	return u, nil
}

func decodeBase64(s string) ([]byte, error) {
	out, err := base64.StdEncoding.DecodeString(s)
	if err != nil && len(s)%4 != 0 {
		if raw, rawErr := base64.RawStdEncoding.DecodeString(s); rawErr == nil {
			return raw, nil
		}
	}
	return out, err
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func isNull(raw json.RawMessage) bool {
	return bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

// describeJSON names a JSON value's kind the way the service's messages do.
func describeJSON(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "object":
		return "an object"
	case "array":
		return "an array"
	case "bool":
		return "a boolean"
	case "null":
		return "null"
	}
	if strings.HasPrefix(kind, "number") {
		return "a number"
	}
	return kind
}

func describeGo(t string) string {
	switch {
	case strings.Contains(t, "string"):
		return "a string"
	case strings.Contains(t, "int"):
		return "an integer"
	case strings.Contains(t, "float"):
		return "a number"
	case strings.Contains(t, "bool"):
		return "a boolean"
	case strings.HasPrefix(t, "[]"):
		return "an array"
	case strings.HasPrefix(t, "map"), strings.Contains(t, "struct"):
		return "an object"
	}
	return "another type"
}

func rawKind(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

func invalidType(param, want string, raw json.RawMessage, eventID string) *Error {
	return invalidRequest(CodeInvalidType, param, eventID, "Invalid type for '%s': expected %s, but got %s instead.", param, want, rawKind(raw))
}

// clip keeps client text in error messages short.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

func quotedList(vals []string) string {
	q := make([]string, len(vals))
	for i, v := range vals {
		q[i] = "'" + v + "'"
	}
	if len(q) > 1 {
		q[len(q)-1] = "and " + q[len(q)-1]
	}
	if len(q) == 2 {
		return q[0] + " " + q[1]
	}
	return strings.Join(q, ", ")
}

func oneOf(param, eventID, got string, allowed ...string) *Error {
	if slices.Contains(allowed, got) {
		return nil
	}
	return ErrInvalidValue(param, eventID, "Invalid value: '%s'. Supported values are: %s.", clip(got), quotedList(allowed))
}
