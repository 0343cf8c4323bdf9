package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voiced/voiced/session"
)

// The token a user mints by hand verifies with the server's own verifier, org and all.
func TestTokenCommandMintsAVerifiableJWT(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("0123456789abcdef0123456789abcdef-dev\n"), 0o600)
	var out, errb bytes.Buffer
	if code := run([]string{"token", "--jwt-secret-file", secret, "--sub", "alice", "--org", "acme", "--orgs", "acme,beta"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	key, err := session.ReadSecretFile(secret)
	if err != nil {
		t.Fatal(err)
	}
	v, err := session.NewVerifier(context.Background(), session.VerifierConfig{Secret: key})
	if err != nil {
		t.Fatal(err)
	}
	p, err := v.Verify(strings.TrimSpace(out.String()), "beta")
	if err != nil {
		t.Fatal(err)
	}
	if p.Subject != "alice" || p.Org != "beta" {
		t.Fatalf("principal %+v, want alice in beta", p)
	}
	for name, args := range map[string][]string{
		"no sub":       {"token", "--jwt-secret-file", secret},
		"no secret":    {"token", "--sub", "a"},
		"bad ttl":      {"token", "--jwt-secret-file", secret, "--sub", "a", "--ttl", "-1s"},
		"short secret": {"token", "--jwt-secret-file", "/nonexistent", "--sub", "a"},
		"reserved sub": {"token", "--jwt-secret-file", secret, "--sub", "service"},
	} {
		if code := run(args, &out, &errb); code == 0 {
			t.Errorf("%s: exit 0", name)
		}
	}
}
