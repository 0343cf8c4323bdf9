package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwt"

	"github.com/voiced/voiced/meter"
	"github.com/voiced/voiced/session"
)

// tokenCommand mints an HS256 principal JWT with the secret a server verifies with
// (--jwt-secret-file), for trying the realtime routes and the browser page by hand. Production
// principals come from the deployment's identity provider, not from here.
func tokenCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("voiced token", flag.ContinueOnError)
	fs.SetOutput(stderr)
	secretFile := fs.String("jwt-secret-file", "", "the HS256 secret file the server was started with (required)")
	sub := fs.String("sub", "", "the principal's subject: whose seconds these are (required)")
	org := fs.String("org", "", "the principal's org claim")
	orgs := fs.String("orgs", "", "comma-separated org memberships (lets X-Org-Id pick one)")
	issuer := fs.String("issuer", "", "iss claim (match the server's --jwt-issuer)")
	audience := fs.String("audience", "", "aud claim (match the server's --jwt-audience)")
	ttl := fs.Duration("ttl", time.Hour, "how long the token is valid")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *secretFile == "" || *sub == "" {
		fmt.Fprintln(stderr, "voiced token: --jwt-secret-file and --sub are required")
		return 2
	}
	if *sub == meter.ServicePrincipal {
		fmt.Fprintf(stderr, "voiced token: --sub %q is reserved (the raw speech doors are metered under it); the server refuses such a token\n", *sub)
		return 2
	}
	if *ttl <= 0 {
		fmt.Fprintln(stderr, "voiced token: --ttl must be positive")
		return 2
	}
	secret, err := session.ReadSecretFile(*secretFile)
	if err != nil {
		fmt.Fprintf(stderr, "voiced token: %v\n", err)
		return 1
	}
	b := jwt.NewBuilder().Subject(*sub).IssuedAt(time.Now()).Expiration(time.Now().Add(*ttl))
	if *org != "" {
		b = b.Claim("org", *org)
	}
	if *orgs != "" {
		b = b.Claim("orgs", strings.Split(*orgs, ","))
	}
	if *issuer != "" {
		b = b.Issuer(*issuer)
	}
	if *audience != "" {
		b = b.Audience([]string{*audience})
	}
	tok, err := b.Build()
	if err != nil {
		fmt.Fprintf(stderr, "voiced token: %v\n", err)
		return 1
	}
	signed, err := jwt.Sign(tok, jwt.WithKey(jwa.HS256, secret))
	if err != nil {
		fmt.Fprintf(stderr, "voiced token: sign: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, string(signed))
	return 0
}
