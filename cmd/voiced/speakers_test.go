package main

import (
	"crypto/sha256"
	"net/http/httptest"
	"testing"
)

// Only what can be a principal's credential goes to the principal path: a JWT- or ticket-shaped
// bearer that is not the service token, or a ticket in the query or subprotocol. Any other
// wrong bearer stays the service token's (its 401, counted kind="service").
func TestPrincipalCredential(t *testing.T) {
	token := sha256.Sum256([]byte("the-token"))
	for _, tc := range []struct {
		name, auth, query, proto string
		want                     bool
	}{
		{"the service token", "Bearer the-token", "", "", false},
		{"an opaque wrong bearer", "Bearer not-the-token", "", "", false},
		{"a JWT-shaped bearer", "Bearer aaa.bbb.ccc", "", "", true},
		{"a ticket bearer", "Bearer ek_abc", "", "", true},
		{"a ticket in the query", "", "ticket=ek_abc", "", true},
		{"an api-key subprotocol", "", "", "realtime, openai-insecure-api-key.aaa.bbb.ccc", true},
		{"no credential", "", "", "", false},
		{"another scheme", "Basic aaa.bbb.ccc", "", "", false},
	} {
		r := httptest.NewRequest("GET", "/v1/transcribe?"+tc.query, nil)
		if tc.auth != "" {
			r.Header.Set("Authorization", tc.auth)
		}
		if tc.proto != "" {
			r.Header.Set("Sec-WebSocket-Protocol", tc.proto)
		}
		if got := principalCredential(r, true, token); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
