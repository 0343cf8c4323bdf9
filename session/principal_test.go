package session

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"

	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/internal/testkit"
)

// rsaKeys returns a signing key (kid "k1") and the public JWKS JSON.
func rsaKeys(t *testing.T) (jwk.Key, []byte) {
	t.Helper()
	raw, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	priv, err := jwk.FromRaw(raw)
	if err != nil {
		t.Fatal(err)
	}
	priv.Set(jwk.KeyIDKey, "k1")
	priv.Set(jwk.AlgorithmKey, jwa.RS256)
	pub, err := priv.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	set := jwk.NewSet()
	set.AddKey(pub)
	b, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	return priv, b
}

func signRS(t *testing.T, key jwk.Key, claims map[string]any) string {
	t.Helper()
	s, err := testkit.SignJWT(jwa.RS256, key, claims)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestVerifierJWKS(t *testing.T) {
	key, set := rsaKeys(t)
	file := filepath.Join(t.TempDir(), "jwks.json")
	os.WriteFile(file, set, 0o600)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(set)
	}))
	defer srv.Close()
	clk := newClock()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	exp := clk.Now().Add(time.Hour).Unix()
	for name, source := range map[string]string{"file": file, "url": srv.URL + "/jwks.json"} {
		t.Run(name, func(t *testing.T) {
			v, err := NewVerifier(ctx, VerifierConfig{JWKS: source, Issuer: "https://idp.test", Audience: "voiced", Now: clk.Now})
			if err != nil {
				t.Fatal(err)
			}
			tests := map[string]struct {
				claims map[string]any
				org    string
				want   Principal
				err    error
			}{
				"good":           {map[string]any{"sub": "ann", "org": "o1", "iss": "https://idp.test", "aud": "voiced", "exp": exp}, "", Principal{"ann", "o1"}, nil},
				"wrong issuer":   {map[string]any{"sub": "ann", "iss": "https://evil.test", "aud": "voiced", "exp": exp}, "", Principal{}, ErrInvalidToken},
				"wrong audience": {map[string]any{"sub": "ann", "iss": "https://idp.test", "aud": "other", "exp": exp}, "", Principal{}, ErrInvalidToken},
				"no sub":         {map[string]any{"iss": "https://idp.test", "aud": "voiced", "exp": exp}, "", Principal{}, ErrNoSubject},
				"member org":     {map[string]any{"sub": "ann", "org": "o1", "orgs": []string{"o2"}, "iss": "https://idp.test", "aud": "voiced", "exp": exp}, "o2", Principal{"ann", "o2"}, nil},
				"foreign org":    {map[string]any{"sub": "ann", "org": "o1", "orgs": []string{"o2"}, "iss": "https://idp.test", "aud": "voiced", "exp": exp}, "o3", Principal{}, ErrNoOrg},
			}
			for name, tc := range tests {
				p, err := v.Verify(signRS(t, key, tc.claims), tc.org)
				if tc.err != nil {
					if !errors.Is(err, tc.err) {
						t.Errorf("%s: err %v, want %v", name, err, tc.err)
					}
					continue
				}
				if err != nil || p != tc.want {
					t.Errorf("%s: %+v %v, want %+v", name, p, err, tc.want)
				}
			}
			// A token signed with another key does not verify.
			other, _ := rsaKeys(t)
			if _, err := v.Verify(signRS(t, other, map[string]any{"sub": "x", "exp": exp}), ""); err == nil {
				t.Error("a token from another key verified")
			}
		})
	}
	if _, err := NewVerifier(ctx, VerifierConfig{JWKS: "http://127.0.0.1:1/none"}); err == nil {
		t.Error("an unreachable JWKS URL was accepted at start")
	}
}

func FuzzVerify(f *testing.F) {
	clk := newClock()
	v, err := NewVerifier(context.Background(), VerifierConfig{Secret: testSecret, Now: clk.Now})
	if err != nil {
		f.Fatal(err)
	}
	f.Add("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.sig")
	f.Add("")
	f.Add("a.b.c.d")
	f.Fuzz(func(t *testing.T, tok string) {
		p, err := v.Verify(tok, "org")
		if err == nil && p.Subject == "" {
			t.Fatalf("verified without a subject: %q", tok)
		}
	})
}

// TestVerifierReasons: each failed check is named in the refusal's message; an iat ahead of the
// clock by more than the skew reads as issued in the future, not as a bad signature, and one
// within the skew verifies.
func TestVerifierReasons(t *testing.T) {
	clk := newClock()
	v, err := NewVerifier(context.Background(), VerifierConfig{Secret: testSecret, Now: clk.Now, Skew: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	now := clk.Now()
	for name, tc := range map[string]struct {
		claims map[string]any
		reason string // "" verifies
	}{
		"iat now":             {map[string]any{"iat": now.Unix()}, ""},
		"iat within the skew": {map[string]any{"iat": now.Add(20 * time.Second).Unix()}, ""},
		"iat in the future":   {map[string]any{"iat": now.Add(time.Hour).Unix()}, "token issued in the future"},
		"expired":             {map[string]any{"exp": now.Add(-time.Hour).Unix()}, "expired"},
		"not yet valid":       {map[string]any{"nbf": now.Add(time.Hour).Unix()}, "not yet valid"},
		"no exp":              {map[string]any{"exp": nil}, "a required claim (exp) is missing"},
		"bad signature":       {map[string]any{"iat": now.Unix(), "tamper": true}, "bad signature or malformed token"},
	} {
		t.Run(name, func(t *testing.T) {
			tamper := tc.claims["tamper"] == true
			delete(tc.claims, "tamper")
			tok := token(t, clk, tc.claims)
			if tamper {
				tok = tok[:len(tok)-2] + "AA"
			}
			_, err := v.Verify(tok, "")
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ref *door.Refusal
			if !errors.As(err, &ref) || !errors.Is(err, ErrInvalidToken) {
				t.Fatalf("err %v, want %s", err, ErrInvalidToken.Name())
			}
			if want := "the principal token did not verify: " + tc.reason; !strings.HasPrefix(ref.Message(), want) {
				t.Errorf("message %q, want it to start %q", ref.Message(), want)
			}
		})
	}
}

// TestReservedSubject: a JWT whose sub is "service" (the raw doors' meter principal) is refused
// by name, at the mint and at the socket.
func TestReservedSubject(t *testing.T) {
	ts := newTestServer(t, Config{})
	svc := token(t, ts.clock, map[string]any{"sub": "service"})
	if code, name, _ := ts.mintRefusal(t, svc, nil); code != 403 || name != "subject_reserved" {
		t.Fatalf("mint: %d %q, want 403 subject_reserved", code, name)
	}
	_, resp, err := ts.dial(t, "/v1/realtime?model=m", &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + svc}}})
	assertRefused(t, resp, err, 403, "subject_reserved")
	if _, err := ts.cfg.Verifier.Verify(token(t, ts.clock, map[string]any{"sub": "services"}), ""); err != nil {
		t.Fatalf("another subject: %v", err)
	}
}
