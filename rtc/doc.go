// Package rtc is voiced's WebRTC media layer (issue 9), independent of the session package:
// it validates SDP offers and parses the signalling body of POST /v1/realtime/calls.
//
// Signalling shapes (OpenAI GA "create call"), as read in public clients:
//   - Content-Type: application/sdp — the body is the SDP offer.
//   - Content-Type: multipart/form-data — a part named "sdp" (the offer, sent with
//     Content-Type application/sdp) and a part named "session" (the session configuration as
//     JSON, application/json). Read in async-openai (Rust) async-openai/src/types/realtime form
//     conversion of RealtimeCallCreateRequest ("sdp" part mime "application/sdp", then "session"
//     JSON) and in a Next.js proxy route of a public repository (comment: "multipart/form-data
//     with: sdp: <offer.sdp;type=application/sdp>, session: JSON;type=application/json"),
//     through the search tool's code corpus.
//
// The answer is the SDP answer as the response body (application/sdp), status 201.
package rtc
