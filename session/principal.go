package session

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/lestrrat-go/jwx/v2/jws"
	"github.com/lestrrat-go/jwx/v2/jwt"

	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/meter"
)

// Principal is a verified speaker: the seconds they hear and speak are metered to Subject and Org.
type Principal struct {
	Subject string // the token's sub; never empty
	Org     string // the token's org claim, or X-Org-Id when the signed membership lists it; may be ""
}

// VerifierConfig says how principal JWTs are checked. Exactly one of JWKS and Secret is set.
type VerifierConfig struct {
	// JWKS is a JSON Web Key Set: a file path, or an http(s) URL fetched and refreshed by jwk.Cache.
	JWKS string
	// Secret is an HS256 key (the contents of --jwt-secret-file).
	Secret []byte
	// Issuer and Audience are checked when set.
	Issuer, Audience string
	// OrgClaim names the token's own org claim (default "org"); OrgsClaim the signed membership
	// list that X-Org-Id must be in (default "orgs").
	OrgClaim, OrgsClaim string
	// Now is the clock (default time.Now); tests move it.
	Now func() time.Time
	// Skew tolerated on exp/nbf/iat (default 30 s).
	Skew time.Duration
}

// Verifier checks principal JWTs (jwx): signature, exp (required), issuer and audience when
// configured, sub (required); and decides the org.
type Verifier struct {
	cfg  VerifierConfig
	opts []jwt.ParseOption
}

// NewVerifier loads the key material (reading a JWKS file, or fetching a JWKS URL once so that a
// bad URL refuses the start) and returns the verifier.
func NewVerifier(ctx context.Context, cfg VerifierConfig) (*Verifier, error) {
	if (cfg.JWKS == "") == (len(cfg.Secret) == 0) {
		return nil, errors.New("session: principal auth needs exactly one of a JWKS (file or URL) and an HS256 secret")
	}
	if cfg.OrgClaim == "" {
		cfg.OrgClaim = "org"
	}
	if cfg.OrgsClaim == "" {
		cfg.OrgsClaim = "orgs"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Skew == 0 {
		cfg.Skew = 30 * time.Second
	}
	opts := []jwt.ParseOption{
		jwt.WithValidate(true),
		jwt.WithRequiredClaim(jwt.ExpirationKey),
		jwt.WithClock(jwt.ClockFunc(func() time.Time { return cfg.Now() })),
		jwt.WithAcceptableSkew(cfg.Skew),
	}
	switch {
	case len(cfg.Secret) > 0:
		opts = append(opts, jwt.WithKey(jwa.HS256, cfg.Secret))
	case strings.HasPrefix(cfg.JWKS, "https://") || strings.HasPrefix(cfg.JWKS, "http://"):
		cache := jwk.NewCache(ctx)
		if err := cache.Register(cfg.JWKS, jwk.WithMinRefreshInterval(5*time.Minute)); err != nil {
			return nil, fmt.Errorf("session: register JWKS URL: %w", err)
		}
		fetchCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if _, err := cache.Refresh(fetchCtx, cfg.JWKS); err != nil {
			return nil, fmt.Errorf("session: fetch JWKS %s: %w", cfg.JWKS, err)
		}
		opts = append(opts, jwt.WithKeySet(jwk.NewCachedSet(cache, cfg.JWKS), jws.WithInferAlgorithmFromKey(true)))
	default:
		set, err := jwk.ReadFile(cfg.JWKS)
		if err != nil {
			return nil, fmt.Errorf("session: read JWKS file %s: %w", cfg.JWKS, err)
		}
		opts = append(opts, jwt.WithKeySet(set, jws.WithInferAlgorithmFromKey(true)))
	}
	if cfg.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(cfg.Issuer))
	}
	if cfg.Audience != "" {
		opts = append(opts, jwt.WithAudience(cfg.Audience))
	}
	return &Verifier{cfg: cfg, opts: opts}, nil
}

// ReadSecretFile reads an HS256 secret file, trimming a trailing newline.
func ReadSecretFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("session: read JWT secret: %w", err)
	}
	b = []byte(strings.TrimRight(string(b), "\r\n"))
	if len(b) < 32 {
		return nil, fmt.Errorf("session: JWT secret in %s is shorter than 32 bytes", path)
	}
	return b, nil
}

// Verify checks token and decides the org: the token's own org claim, or requestedOrg
// (X-Org-Id) when the signed membership claim lists it. Failures are named refusals.
func (v *Verifier) Verify(token, requestedOrg string) (Principal, error) {
	tok, err := jwt.ParseString(token, v.opts...)
	if err != nil {
		return Principal{}, door.Refuse(ErrInvalidToken, "the principal token did not verify: "+safeJWTReason(err))
	}
	if tok.Subject() == "" {
		return Principal{}, ErrNoSubject
	}
	if tok.Subject() == meter.ServicePrincipal {
		return Principal{}, ErrReservedSubject
	}
	p := Principal{Subject: tok.Subject()}
	if org, ok := tok.Get(v.cfg.OrgClaim); ok {
		if s, ok := org.(string); ok {
			p.Org = s
		}
	}
	if requestedOrg != "" && requestedOrg != p.Org {
		if !slices.Contains(claimStrings(tok, v.cfg.OrgsClaim), requestedOrg) {
			return Principal{}, ErrNoOrg
		}
		p.Org = requestedOrg
	}
	return p, nil
}

func claimStrings(tok jwt.Token, name string) []string {
	raw, ok := tok.Get(name)
	if !ok {
		return nil
	}
	switch v := raw.(type) {
	case []string:
		return v
	case []any:
		out := make([]string, 0, len(v))
		for _, x := range v {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	case string:
		return []string{v}
	}
	return nil
}

// safeJWTReason says which check failed without echoing token contents.
func safeJWTReason(err error) string {
	switch {
	case errors.Is(err, jwt.ErrTokenExpired()):
		return "expired"
	case errors.Is(err, jwt.ErrTokenNotYetValid()):
		return "not yet valid"
	case errors.Is(err, jwt.ErrInvalidIssuedAt()):
		// iat later than now plus the skew: the issuer's clock is ahead, or the token was forged
		// with a future date; either way the signature was fine.
		return "token issued in the future (iat is later than now, beyond the allowed clock skew)"
	case errors.Is(err, jwt.ErrInvalidIssuer()):
		return "wrong issuer"
	case errors.Is(err, jwt.ErrInvalidAudience()):
		return "wrong audience"
	case errors.Is(err, jwt.ErrRequiredClaim()):
		return "a required claim (exp) is missing"
	}
	return "bad signature or malformed token"
}

// bearer returns the Authorization: Bearer value, or "".
func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}
