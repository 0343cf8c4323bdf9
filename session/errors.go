package session

import (
	"net/http"
	"time"

	"github.com/voiced/voiced/door"
)

// Refusals before the upgrade, by name (door.Refusal: status, name, message safe to show).
var (
	ErrNoCredential = &door.Refusal{Status: http.StatusUnauthorized, Name: "missing_credential",
		Message: "send a principal JWT (Authorization: Bearer) or a ticket (?ticket=, Authorization: Bearer, or the openai-insecure-api-key.<ticket> subprotocol)", Reason: door.ReasonAuth}
	ErrInvalidToken = &door.Refusal{Status: http.StatusUnauthorized, Name: "invalid_token",
		Message: "the principal token did not verify (signature, expiry, issuer or audience)", Reason: door.ReasonAuth}
	ErrNoSubject = &door.Refusal{Status: http.StatusUnauthorized, Name: "token_without_subject",
		Message: "the principal token has no 'sub' claim: seconds heard and spoken must land on a person", Reason: door.ReasonAuth}
	// ErrReservedSubject: the raw speech doors meter under the principal "service"
	// (meter.ServicePrincipal); a person's token with that sub would share, and spend, its meter.
	ErrReservedSubject = &door.Refusal{Status: http.StatusForbidden, Name: "subject_reserved",
		Message: `the principal token's sub is "service", the name the server's own speech doors are metered under: issue the token with another subject`, Reason: door.ReasonAuth}
	ErrNoOrg = &door.Refusal{Status: http.StatusForbidden, Name: "org_not_permitted",
		Message: "X-Org-Id names an org the token's signed membership claim does not list", Reason: door.ReasonAuth}
	ErrNoVerifier = &door.Refusal{Status: http.StatusServiceUnavailable, Name: "principal_auth_not_configured",
		Message: "principal JWTs cannot be verified: start voiced with --jwks (file or URL) or --jwt-secret-file", Reason: door.ReasonAuth}
	ErrTicketInvalid = &door.Refusal{Status: http.StatusUnauthorized, Name: "ticket_invalid",
		Message: "the ticket is unknown, already used, or expired: ask POST /v1/voice/session for a new one", Reason: door.ReasonAuth}
	ErrCredentialInQuery = &door.Refusal{Status: http.StatusUnauthorized, Name: "credential_not_a_ticket",
		Message: "?ticket= takes a one-use ticket (ek_…, from POST /v1/voice/session) only: send a principal JWT in Authorization: Bearer (or the openai-insecure-api-key.<key> subprotocol), never in a URL", Reason: door.ReasonAuth}
	ErrTicketTTL = &door.Refusal{Status: http.StatusBadRequest, Name: "invalid_ttl",
		Message: "the ticket lifetime asked for is outside the allowed range"}
	ErrBadRequest = &door.Refusal{Status: http.StatusBadRequest, Name: "invalid_request",
		Message: "the request body is not valid"}
	ErrOrigin   = door.ErrOriginNotAllowed
	ErrCapacity = &door.Refusal{Status: http.StatusTooManyRequests, Name: "too_many_conversations",
		Message: "the server holds as many conversations as it can serve (--max-conversations); retry shortly", RetryAfter: 5 * time.Second, Reason: door.ReasonCap}
	ErrTenantCapacity = &door.Refusal{Status: http.StatusTooManyRequests, Name: "too_many_conversations_for_tenant",
		Message: "this org holds as many conversations as it may (--max-per-tenant); retry shortly", RetryAfter: 5 * time.Second,
		Reason: door.ReasonTenantCap}
	ErrNoSpeech = &door.Refusal{Status: http.StatusServiceUnavailable, Name: "speech_not_ready",
		Message: "the conversation's speech engines are not ready", Reason: door.ReasonNotWarm}
)

// Error codes of our own in realtime error events (clients do not match on these).
const (
	codeTranscriptionFailed = "transcription_failed"
	codeResponseFailed      = "response_failed"
	codeShuttingDown        = "server_shutting_down"
	codeQuota               = "insufficient_quota" // the type and code clients expect for billing (docs §9)
)
