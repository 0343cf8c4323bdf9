package testkit

import (
	"testing"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwt"
)

// SignJWT signs claims with key under alg (HS256 with a []byte secret, RS256 with a private
// jwk.Key …). A nil claim is left out, so a caller can drop one of its defaults.
func SignJWT(alg jwa.SignatureAlgorithm, key any, claims map[string]any) (string, error) {
	tok := jwt.New()
	for k, v := range claims {
		if v == nil {
			continue
		}
		if err := tok.Set(k, v); err != nil {
			return "", err
		}
	}
	b, err := jwt.Sign(tok, jwt.WithKey(alg, key))
	return string(b), err
}

// JWT is an HS256 principal token for secret carrying claims; it fails t on error.
func JWT(t testing.TB, secret []byte, claims map[string]any) string {
	t.Helper()
	s, err := SignJWT(jwa.HS256, secret, claims)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
