package main

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/voiced/voiced/door"
)

var errUnauthorized = door.NewRefusal(http.StatusUnauthorized, "unauthorized",
	"this route needs the service token: Authorization: Bearer <token>")

// authConfig is the service token's flags: the token every route but the public ones needs.
type authConfig struct {
	tokenFile string
	insecure  bool
}

func (c *authConfig) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.tokenFile, "token-file", "", "file holding the service token (surrounding whitespace trimmed); VOICED_TOKEN may hold the token itself")
	fs.BoolVar(&c.insecure, "insecure-no-auth", false, "serve without a service token (development only: every route is open)")
}

// validate finds the service token and sets the app's check of it (app.auth, app.serviceToken).
func (c *authConfig) validate(app *App) error {
	token, source, err := serviceToken(app, c.tokenFile)
	if err != nil {
		return err
	}
	switch {
	case token == nil && !c.insecure:
		return errors.New("no service token: give --token-file FILE or VOICED_TOKEN=<token> " +
			"(or --insecure-no-auth to serve every route open, for development only)")
	case token != nil && c.insecure:
		return fmt.Errorf("--insecure-no-auth and a service token (%s) both given: choose one", source)
	case c.insecure:
		app.Log.Warn("serving WITHOUT a service token (--insecure-no-auth): every route is open")
		app.auth = func(h http.Handler) http.Handler { return h }
	default:
		// Same series as the doors' refusals (kind is constant, reason variable in all three).
		refused := prometheus.NewCounterVec(prometheus.CounterOpts{Name: door.MetricSessionsRefused,
			Help: door.MetricSessionsRefusedHelp, ConstLabels: prometheus.Labels{"kind": "service"}}, []string{"reason"})
		if app.Metrics != nil {
			app.Metrics.MustRegister(refused)
		}
		app.auth = bearer(token, refused.WithLabelValues(door.ReasonAuth).Inc)
		app.serviceToken = token
	}
	return nil
}

// serviceToken finds the token: --token-file on the command line, else VOICED_TOKEN, else
// VOICED_TOKEN_FILE. It returns nil when none is configured; an empty or unreadable one is an error.
func serviceToken(app *App, tokenFile string) (token []byte, source string, err error) {
	envToken, envSet := lookupEnv("VOICED_TOKEN")
	var raw string
	switch {
	case tokenFile != "" && (app.FromCommandLine("token-file") || !envSet):
		b, err := os.ReadFile(tokenFile)
		if err != nil {
			return nil, "", fmt.Errorf("read the service token file (--token-file): %w", err)
		}
		raw, source = string(b), "--token-file "+tokenFile
	case envSet:
		raw, source = envToken, "VOICED_TOKEN"
	default:
		return nil, "", nil
	}
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, "", fmt.Errorf("the service token from %s is empty", source)
	}
	return []byte(raw), source, nil
}

// bearer checks Authorization: Bearer <token> in constant time (both sides hashed first, so the
// comparison does not leak the token's length either).
func bearer(token []byte, refused func()) func(http.Handler) http.Handler {
	want := sha256.Sum256(token)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h := r.Header.Get("Authorization")
			scheme, given, ok := strings.Cut(h, " ")
			got := sha256.Sum256([]byte(strings.TrimSpace(given)))
			if !ok || !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare(want[:], got[:]) != 1 {
				challenge := `Bearer realm="voiced"`
				if h != "" {
					challenge += `, error="invalid_token"`
				}
				w.Header().Set("WWW-Authenticate", challenge)
				if refused != nil {
					refused() // voiced_sessions_refused_total{kind="service",reason="auth"}
				}
				door.WriteError(w, errUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}
