package session

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/voiced/voiced/internal/testkit"
)

// TestVerifierOrgMembership: X-Org-Id names the org to meter only when the token's own org claim
// is that org or the signed membership list names it. A token with no membership list, an empty
// one, or one of other orgs cannot name a foreign org (issue 25: a mutation making the check
// conditional on the list being present survived every test).
func TestVerifierOrgMembership(t *testing.T) {
	clk := newClock()
	v, err := NewVerifier(context.Background(), VerifierConfig{Secret: testSecret, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		claims  map[string]any
		org     string
		wantOrg string // "" with err set: refused
		err     error
	}{
		"no header: own org":             {map[string]any{"org": "org-a"}, "", "org-a", nil},
		"header names own org":           {map[string]any{"org": "org-a"}, "org-a", "org-a", nil},
		"no orgs claim, foreign org":     {map[string]any{"org": "org-a"}, "org-evil", "", ErrNoOrg},
		"no org nor orgs, any org":       {map[string]any{}, "org-evil", "", ErrNoOrg},
		"empty orgs list, foreign org":   {map[string]any{"orgs": []string{}}, "org-evil", "", ErrNoOrg},
		"orgs of others, foreign org":    {map[string]any{"orgs": []string{"org-b", "org-c"}}, "org-evil", "", ErrNoOrg},
		"orgs names it":                  {map[string]any{"orgs": []string{"org-b", "org-c"}}, "org-c", "org-c", nil},
		"orgs as one string names it":    {map[string]any{"orgs": "org-b"}, "org-b", "org-b", nil},
		"orgs as one string, other org":  {map[string]any{"orgs": "org-b"}, "org-bb", "", ErrNoOrg},
		"membership is exact: case":      {map[string]any{"orgs": []string{"org-b"}}, "ORG-B", "", ErrNoOrg},
		"membership is exact: prefix":    {map[string]any{"orgs": []string{"org-b"}}, "org-", "", ErrNoOrg},
		"membership is exact: suffix":    {map[string]any{"orgs": []string{"org-b"}}, "org-b ", "", ErrNoOrg},
		"orgs with a non-string entry":   {map[string]any{"orgs": []any{42, "org-b"}}, "42", "", ErrNoOrg},
		"orgs of the wrong type":         {map[string]any{"orgs": map[string]any{"org-b": true}}, "org-b", "", ErrNoOrg},
		"org claim not a string ignored": {map[string]any{"org": 7}, "", "", nil},
	} {
		t.Run(name, func(t *testing.T) {
			claims := map[string]any{"sub": "user-1", "exp": clk.Now().Add(time.Hour).Unix()}
			for k, x := range tc.claims {
				claims[k] = x
			}
			tok := testkit.JWT(t, testSecret, claims)
			p, err := v.Verify(tok, tc.org)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("Verify(%v, X-Org-Id %q) = %+v, %v; want %s", tc.claims, tc.org, p, err, ErrNoOrg.Name())
				}
				return
			}
			if err != nil || p.Org != tc.wantOrg || p.Subject != "user-1" {
				t.Fatalf("Verify(%v, X-Org-Id %q) = %+v, %v; want org %q", tc.claims, tc.org, p, err, tc.wantOrg)
			}
		})
	}
}
