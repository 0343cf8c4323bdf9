package session

import (
	"net/http"
	"time"

	"github.com/voiced/voiced/door"
)

// Refusals before the upgrade, by name (door.Refusal: status, name, message safe to show).
var (
	ErrNoCredential = door.NewRefusal(http.StatusUnauthorized, "missing_credential",
		"send a principal JWT (Authorization: Bearer) or a ticket (?ticket=, Authorization: Bearer, or the openai-insecure-api-key.<ticket> subprotocol)").WithReason(door.ReasonAuth)
	ErrInvalidToken = door.NewRefusal(http.StatusUnauthorized, "invalid_token",
		"the principal token did not verify (signature, expiry, issuer or audience)").WithReason(door.ReasonAuth)
	ErrNoSubject = door.NewRefusal(http.StatusUnauthorized, "token_without_subject",
		"the principal token has no 'sub' claim: seconds heard and spoken must land on a person").WithReason(door.ReasonAuth)
	// ErrReservedSubject: the raw speech doors meter under the principal "service"
	// (meter.ServicePrincipal); a person's token with that sub would share, and spend, its meter.
	ErrReservedSubject = door.NewRefusal(http.StatusForbidden, "subject_reserved",
		`the principal token's sub is "service", the name the server's own speech doors are metered under: issue the token with another subject`).WithReason(door.ReasonAuth)
	ErrNoOrg = door.NewRefusal(http.StatusForbidden, "org_not_permitted",
		"X-Org-Id names an org the token's signed membership claim does not list").WithReason(door.ReasonAuth)
	ErrNoVerifier = door.NewRefusal(http.StatusServiceUnavailable, "principal_auth_not_configured",
		"principal JWTs cannot be verified: start voiced with --jwks (file or URL) or --jwt-secret-file").WithReason(door.ReasonAuth)
	ErrTicketInvalid = door.NewRefusal(http.StatusUnauthorized, "ticket_invalid",
		"the ticket is unknown, already used, or expired: ask POST /v1/voice/session for a new one").WithReason(door.ReasonAuth)
	ErrCredentialInQuery = door.NewRefusal(http.StatusUnauthorized, "credential_not_a_ticket",
		"?ticket= takes a one-use ticket (ek_…, from POST /v1/voice/session) only: send a principal JWT in Authorization: Bearer (or the openai-insecure-api-key.<key> subprotocol), never in a URL").WithReason(door.ReasonAuth)
	ErrTicketTTL = door.NewRefusal(http.StatusBadRequest, "invalid_ttl",
		"the ticket lifetime asked for is outside the allowed range")
	ErrBadRequest = door.NewRefusal(http.StatusBadRequest, "invalid_request",
		"the request body is not valid")
	ErrOrigin   = door.ErrOriginNotAllowed
	ErrCapacity = door.NewRefusal(http.StatusTooManyRequests, "too_many_conversations",
		"the server holds as many conversations as it can serve (--max-conversations); retry shortly").WithRetryAfter(5 * time.Second).WithReason(door.ReasonCap)
	ErrTenantCapacity = door.NewRefusal(http.StatusTooManyRequests, "too_many_conversations_for_tenant",
		"this org holds as many conversations as it may (--max-per-tenant); retry shortly").WithRetryAfter(5 * time.Second).WithReason(door.ReasonTenantCap)
	ErrNoSpeech = door.NewRefusal(http.StatusServiceUnavailable, "speech_not_ready",
		"the conversation's speech engines are not ready").WithReason(door.ReasonNotWarm)
)

// Error codes of our own in realtime error events (clients do not match on these).
const (
	codeTranscriptionFailed = "transcription_failed"
	codeResponseFailed      = "response_failed"
	codeShuttingDown        = "server_shutting_down"
	codeQuota               = "insufficient_quota" // the type and code clients expect for billing (docs §9)
)
