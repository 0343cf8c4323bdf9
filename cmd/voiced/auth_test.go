package main

import (
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/voiced/voiced/door"
)

// TestBearerServiceToken: only Authorization: Bearer <the token> passes; the scheme's case and
// the spaces around the token do not matter (RFC 7235: the scheme is case-insensitive, 1*SP before
// the credentials; the token file is trimmed the same way); anything else in the token is refused:
// a prefix, a suffix (issue 25: a mutation hashing only the first len(token) bytes survived every
// test), a truncation, another case, whitespace inside it, an empty one.
func TestBearerServiceToken(t *testing.T) {
	const tok = "s3cret-token"
	refused := 0
	h := bearer([]byte(tok), func() { refused++ })(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	for _, tc := range []struct {
		name, header string
		pass         bool
	}{
		{"exact", "Bearer " + tok, true},
		{"scheme lower case", "bearer " + tok, true},
		{"scheme upper case", "BEARER " + tok, true},
		{"spaces before the token", "Bearer   " + tok, true},
		{"spaces after the token", "Bearer " + tok + "  ", true},
		{"no header", "", false},
		{"token without a scheme", tok, false},
		{"another scheme", "Basic " + tok, false},
		{"scheme only", "Bearer", false},
		{"empty token", "Bearer ", false},
		{"blank token", "Bearer    ", false},
		{"same-length typo", "Bearer s3cret-tokem", false},
		{"unrelated", "Bearer hunter2", false},
		{"suffix", "Bearer " + tok + "x", false},
		{"token twice", "Bearer " + tok + tok, false},
		{"suffix after a space", "Bearer " + tok + " x", false},
		{"suffix NUL", "Bearer " + tok + "\x00", false},
		{"prefix", "Bearer x" + tok, false},
		{"prefix after a space", "Bearer x " + tok, false},
		{"scheme twice", "Bearer Bearer " + tok, false},
		{"truncated", "Bearer " + tok[:len(tok)-1], false},
		{"first byte only", "Bearer " + tok[:1], false},
		{"upper case", "Bearer " + strings.ToUpper(tok), false},
		{"one letter's case", "Bearer S3cret-token", false},
		{"space inside", "Bearer s3cret -token", false},
		{"tab inside", "Bearer s3cret\t-token", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := refused
			req := httptest.NewRequest("GET", "/v1/transcribe", nil)
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if tc.pass {
				if rec.Code != http.StatusNoContent || refused != before {
					t.Fatalf("Authorization %q: %d %s, want it to pass", tc.header, rec.Code, rec.Body)
				}
				return
			}
			if rec.Code != http.StatusUnauthorized || refused != before+1 {
				t.Fatalf("Authorization %q: %d (refusals counted %d), want 401 counted once", tc.header, rec.Code, refused-before)
			}
			if !strings.Contains(rec.Body.String(), `"unauthorized"`) {
				t.Errorf("body %s does not name unauthorized", rec.Body)
			}
			challenge := rec.Header().Get("WWW-Authenticate")
			if want := `Bearer realm="voiced"`; !strings.HasPrefix(challenge, want) {
				t.Errorf("WWW-Authenticate %q, want it to start %s", challenge, want)
			}
			if got, want := strings.Contains(challenge, `error="invalid_token"`), tc.header != ""; got != want {
				t.Errorf("WWW-Authenticate %q: error=\"invalid_token\" present %v, want %v (only when a credential was sent)", challenge, got, want)
			}
		})
	}
}

// TestAuthValidate: serving needs exactly one of a service token and --insecure-no-auth; the token
// guards every route through bearer and counts refusals on voiced_sessions_refused_total.
func TestAuthValidate(t *testing.T) {
	defer func(old func(string) (string, bool)) { lookupEnv = old }(lookupEnv)
	for _, tc := range []struct {
		name     string
		env      string // VOICED_TOKEN, "" unset
		insecure bool
		wantErr  string
		open     bool // every route open
	}{
		{"token", "tok", false, "", false},
		{"neither", "", false, "no service token: give --token-file FILE or VOICED_TOKEN", false},
		{"both", "tok", true, "--insecure-no-auth and a service token (VOICED_TOKEN) both given", false},
		{"insecure", "", true, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lookupEnv = func(k string) (string, bool) {
				if k == "VOICED_TOKEN" && tc.env != "" {
					return tc.env, true
				}
				return "", false
			}
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			reg := prometheus.NewRegistry()
			app := &App{flagSet: fs, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: reg}
			err := (&authConfig{insecure: tc.insecure}).validate(app)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("validate: %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			h := app.auth(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/transcribe", nil))
			if got := rec.Code == http.StatusNoContent; got != tc.open {
				t.Fatalf("a request without a token: %d, want open=%v", rec.Code, tc.open)
			}
			if tc.open {
				if app.serviceToken != nil {
					t.Errorf("insecure: serviceToken %q, want nil", app.serviceToken)
				}
				return
			}
			if string(app.serviceToken) != tc.env {
				t.Errorf("serviceToken %q, want %q", app.serviceToken, tc.env)
			}
			if n := refusedAuth(t, reg); n != 1 {
				t.Errorf("voiced_sessions_refused_total{kind=service,reason=auth} = %v, want 1", n)
			}
		})
	}
}

// refusedAuth reads voiced_sessions_refused_total{kind="service",reason="auth"} from reg.
func refusedAuth(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != door.MetricSessionsRefused {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["kind"] == "service" && labels["reason"] == door.ReasonAuth {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("%s{kind=service,reason=%s} is not registered", door.MetricSessionsRefused, door.ReasonAuth)
	return 0
}
