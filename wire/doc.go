// Package wire is the server side of the OpenAI Realtime protocol, both
// dialects (beta realtime=v1 and GA gpt-realtime): it decodes client events
// and encodes server events, filling what go-openai-realtime v0.6.1 lacks
// (client-event decoding, field presence, tool_choice, GA names and shapes,
// conversation.item.retrieved, event_id on every event, [] / "" / null
// where clients need them). It holds no connection state beyond the
// dialect; the session package owns the conversation.
//
// Reading (client → server):
//
//	d := wire.DialectFromHandshake(r.Header) // Beta on OpenAI-Beta: realtime=v1 or openai-beta.realtime-v1
//	ev, err := wire.Decode(frame, d)         // err is always a *wire.Error: enc.Encode(err) and keep going
//	switch ev := ev.(type) {
//	case *wire.SessionUpdate:
//		d, err = ev.Redecide(d, first)       // the first update's shape decides the dialect
//		enc.SetDialect(d)
//		err = sess.Apply(ev)                 // presence semantics; all or nothing
//	case *wire.InputAudioBufferAppend:       // ev.Audio already base64-decoded
//	...
//	}
//
// Every decode failure is a *Error with type invalid_request_error, the
// code clients match on (invalid_event, invalid_value, invalid_type,
// unknown_parameter, missing_required_parameter), the param path in the
// dialect the client used ("session.audio.input.format") and the client's
// event_id. The session's own refusals have constructors with the exact
// codes and texts of docs/realtime-protocol.md §9: ErrCommitEmpty,
// ErrActiveResponse, ErrCancelNotActive, ErrTruncateUnknownItem,
// ErrAudioEndTooLong, ErrItemNotFound, ErrSessionExpired, ErrServer.
//
// Session is the effective configuration, dialect-neutral (NewSession gives
// OpenAI's defaults); Field[T] in SessionPatch/ResponseParams tells absent
// from null from a value, so `turn_detection: null` (the client commits)
// differs from no turn_detection (unchanged). Audio formats are one enum
// (PCM16, G711Ulaw, G711Alaw) whichever way they were written.
//
// Writing (server → client): one Encoder per connection; Encode takes a
// dialect-neutral event value (ConversationItemAdded, ResponseAudioDelta,
// ...) and writes the dialect's name with "type" and a fresh "event_id".
// It returns nil for an event the dialect lacks (conversation.item.done
// on beta): write nothing. Items, responses and sessions are rendered in
// the dialect's shape: GA output_text/output_audio content (beta
// text/audio), content_part parts typed audio/text in both, content:[],
// output:[], arguments:"", transcript:"" on assistant audio and null on
// untranscribed user audio, interrupt_response always explicit.
// Response usage carries voiced's heard_seconds and spoken_seconds beside
// the token counts.
package wire
