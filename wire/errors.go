package wire

import (
	"encoding/json"
	"fmt"
)

// Error types, as the service sends them in error.type.
const (
	TypeInvalidRequest = "invalid_request_error"
	TypeServer         = "server_error"
)

// Error codes clients match on (docs/realtime-protocol.md §9). Keep them exact.
const (
	CodeInvalidEvent             = "invalid_event"
	CodeInvalidValue             = "invalid_value"
	CodeUnknownParameter         = "unknown_parameter"
	CodeMissingRequiredParameter = "missing_required_parameter"
	CodeInvalidType              = "invalid_type"
	CodeCommitEmpty              = "input_audio_buffer_commit_empty"
	CodeActiveResponse           = "conversation_already_has_active_response"
	CodeCancelNotActive          = "response_cancel_not_active"
	CodeTruncateInvalidItemID    = "item_truncate_invalid_item_id"
	CodeRetrieveInvalidItemID    = "item_retrieve_invalid_item_id"
	CodeDeleteInvalidItemID      = "item_delete_invalid_item_id"
	CodeSessionExpired           = "session_expired"
	CodeServerError              = "server_error"
)

// Error is an OpenAI realtime error: what goes in the "error" object of an
// error event. It is also a Go error and a ServerEvent, so the session can
// hand a decode failure straight to its writer: enc.Encode(err).
//
// Param and EventID are sent as null when empty.
type Error struct {
	Type    string // invalid_request_error or server_error
	Code    string // one of the Code* constants; "" is sent as null
	Message string // safe to show a client
	Param   string // the offending parameter path, e.g. "session.audio.input.format"
	EventID string // the client event_id that caused it, when known
}

func (e *Error) Error() string {
	if e.Param != "" {
		return fmt.Sprintf("realtime %s (%s): %s [param %s]", e.Type, e.Code, e.Message, e.Param)
	}
	return fmt.Sprintf("realtime %s (%s): %s", e.Type, e.Code, e.Message)
}

// WithEventID returns a copy of e naming the client event that caused it.
func (e *Error) WithEventID(id string) *Error {
	c := *e
	c.EventID = id
	return &c
}

type errorJSON struct {
	Type    string  `json:"type"`
	Code    *string `json:"code"`
	Message string  `json:"message"`
	Param   *string `json:"param"`
	EventID *string `json:"event_id"`
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// MarshalJSON writes the error object (not the event): {type, code, message, param, event_id}.
func (e *Error) MarshalJSON() ([]byte, error) {
	return json.Marshal(errorJSON{e.Type, nullable(e.Code), e.Message, nullable(e.Param), nullable(e.EventID)})
}

func invalidRequest(code, param, eventID, format string, args ...any) *Error {
	return &Error{Type: TypeInvalidRequest, Code: code, Message: fmt.Sprintf(format, args...), Param: param, EventID: eventID}
}

// ErrInvalidEvent is a client event that cannot be read at all (malformed JSON, no type).
func ErrInvalidEvent(eventID, message string) *Error {
	return invalidRequest(CodeInvalidEvent, "", eventID, "%s", message)
}

// ErrInvalidValue is a parameter with a value out of range or not in its enum.
func ErrInvalidValue(param, eventID, format string, args ...any) *Error {
	return invalidRequest(CodeInvalidValue, param, eventID, format, args...)
}

// ErrUnknownParameter names a parameter this dialect does not have:
// "Unknown parameter: 'session.type'."
func ErrUnknownParameter(param, eventID string) *Error {
	return invalidRequest(CodeUnknownParameter, param, eventID, "Unknown parameter: '%s'.", param)
}

// ErrMissingParameter names a required parameter that is absent.
func ErrMissingParameter(param, eventID string) *Error {
	return invalidRequest(CodeMissingRequiredParameter, param, eventID, "Missing required parameter: '%s'.", param)
}

// ErrCommitEmpty answers input_audio_buffer.commit with less than 100 ms buffered.
func ErrCommitEmpty(bufferedMs float64, eventID string) *Error {
	return invalidRequest(CodeCommitEmpty, "", eventID,
		"Error committing input audio buffer: buffer too small. Expected at least 100ms of audio, but buffer only has %.2fms of audio.", bufferedMs)
}

// ErrActiveResponse answers response.create while responseID is still writing the conversation.
func ErrActiveResponse(responseID, eventID string) *Error {
	return invalidRequest(CodeActiveResponse, "", eventID,
		"Conversation already has an active response in progress: %s. Wait until the response is finished before creating a new one.", responseID)
}

// ErrCancelNotActive answers response.cancel with nothing running.
func ErrCancelNotActive(eventID string) *Error {
	return invalidRequest(CodeCancelNotActive, "", eventID, "Cancellation failed: no active response found")
}

// ErrTruncateUnknownItem answers conversation.item.truncate naming an unknown item.
func ErrTruncateUnknownItem(itemID, eventID string) *Error {
	return invalidRequest(CodeTruncateInvalidItemID, "item_id", eventID, "Item with item_id not found: %s", itemID)
}

// ErrAudioEndTooLong answers a truncate past the end of the item's audio.
func ErrAudioEndTooLong(audioMs, requestedMs int, eventID string) *Error {
	return invalidRequest(CodeInvalidValue, "audio_end_ms", eventID,
		"Audio content of %dms is already shorter than %dms", audioMs, requestedMs)
}

// ErrItemNotFound answers retrieve/delete (param "item_id") or create (param
// "previous_item_id") naming an item the conversation does not hold.
func ErrItemNotFound(param, itemID, eventID string) *Error {
	return invalidRequest(CodeInvalidValue, param, eventID, "Item with item_id not found: %s", itemID)
}

// ErrRetrieveUnknownItem answers conversation.item.retrieve of an item the conversation does not
// hold, as OpenAI does: Pipecat matches the code and reads the item id back from the client's
// event_id ("rci_<item_id>"), and ends its session on any other code.
func ErrRetrieveUnknownItem(itemID, eventID string) *Error {
	return invalidRequest(CodeRetrieveInvalidItemID, "item_id", eventID,
		"Error retrieving item: the item with id '%s' does not exist.", itemID)
}

// ErrDeleteUnknownItem answers conversation.item.delete of an item the conversation does not hold.
func ErrDeleteUnknownItem(itemID, eventID string) *Error {
	return invalidRequest(CodeDeleteInvalidItemID, "item_id", eventID,
		"Error deleting item: the item with id '%s' does not exist.", itemID)
}

// ErrSessionExpired is sent before closing a session that hit its limit (close 1001).
func ErrSessionExpired(limit string) *Error {
	return invalidRequest(CodeSessionExpired, "", "", "Your session hit the maximum duration of %s.", limit)
}

// ErrAudioLength refuses an append that is not a whole number of samples
// of the session's input format (odd-length pcm16).
func ErrAudioLength(f AudioFormat, n int, eventID string) *Error {
	return invalidRequest(CodeInvalidValue, "audio", eventID,
		"Invalid 'audio': %d bytes is not a whole number of %s samples (%d bytes each).", n, f, f.BytesPerSample())
}

// ErrSessionIdle is sent before closing a session that received no events
// for idle (code session_expired, as clients handle the service's limit).
func ErrSessionIdle(idle string) *Error {
	return invalidRequest(CodeSessionExpired, "", "", "Your session was closed after %s without client events.", idle)
}

// ErrServer is a failure on our side (a mind that failed, a synthesis error);
// message must be safe to show.
func ErrServer(message, eventID string) *Error {
	return &Error{Type: TypeServer, Code: CodeServerError, Message: message, EventID: eventID}
}
