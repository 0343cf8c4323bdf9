package session

import (
	"net/http"
	"time"

	"github.com/voiced/voiced/speechcore"
)

// Refusals before the upgrade, by name (speechcore.Refusal: status, name, message safe to show).
var (
	ErrNoCredential = &speechcore.Refusal{Status: http.StatusUnauthorized, Name: "missing_credential",
		Message: "send a principal JWT (Authorization: Bearer) or a ticket (?ticket=, Authorization: Bearer, or the openai-insecure-api-key.<ticket> subprotocol)"}
	ErrInvalidToken = &speechcore.Refusal{Status: http.StatusUnauthorized, Name: "invalid_token",
		Message: "the principal token did not verify (signature, expiry, issuer or audience)"}
	ErrNoSubject = &speechcore.Refusal{Status: http.StatusUnauthorized, Name: "token_without_subject",
		Message: "the principal token has no 'sub' claim: seconds heard and spoken must land on a person"}
	ErrNoOrg = &speechcore.Refusal{Status: http.StatusForbidden, Name: "org_not_permitted",
		Message: "X-Org-Id names an org the token's signed membership claim does not list"}
	ErrNoVerifier = &speechcore.Refusal{Status: http.StatusServiceUnavailable, Name: "principal_auth_not_configured",
		Message: "principal JWTs cannot be verified: start voiced with --jwks (file or URL) or --jwt-secret-file"}
	ErrTicketInvalid = &speechcore.Refusal{Status: http.StatusUnauthorized, Name: "ticket_invalid",
		Message: "the ticket is unknown, already used, or expired: ask POST /v1/voice/session for a new one"}
	ErrTicketTTL = &speechcore.Refusal{Status: http.StatusBadRequest, Name: "invalid_ttl",
		Message: "the ticket lifetime asked for is outside the allowed range"}
	ErrBadRequest = &speechcore.Refusal{Status: http.StatusBadRequest, Name: "invalid_request",
		Message: "the request body is not valid"}
	ErrOrigin = &speechcore.Refusal{Status: http.StatusForbidden, Name: "origin_not_allowed",
		Message: "this browser Origin is not on the server's --allow-origin list"}
	ErrCapacity = &speechcore.Refusal{Status: http.StatusTooManyRequests, Name: "too_many_conversations",
		Message: "the server holds as many conversations as it can serve (--max-conversations); retry shortly", RetryAfter: 5 * time.Second}
	ErrTenantCapacity = &speechcore.Refusal{Status: http.StatusTooManyRequests, Name: "too_many_conversations_for_tenant",
		Message: "this org holds as many conversations as it may (--max-per-tenant); retry shortly", RetryAfter: 5 * time.Second}
	ErrNoSpeech = &speechcore.Refusal{Status: http.StatusServiceUnavailable, Name: "speech_not_ready",
		Message: "the conversation's speech engines are not ready"}
)

// Error codes of our own in realtime error events (clients do not match on these).
const (
	codeTranscriptionFailed = "transcription_failed"
	codeResponseFailed      = "response_failed"
	codeShuttingDown        = "server_shutting_down"
	codeQuota               = "insufficient_quota" // the type and code clients expect for billing (docs §9)
)
