package session

import (
	"strings"
	"testing"
)

// TestMintBodyBound: a minting body of exactly MaxMintBody bytes is read ("at most"), one byte more
// is 413 request_too_large. Found by make mutate: the bound could be off by one with every test
// passing (TestMintBodyAndStoredSession's big body is far past it).
func TestMintBodyBound(t *testing.T) {
	ts := newTestServer(t, Config{})
	jwt := token(t, ts.clock, nil)
	body := `{"expires_in": 60}`
	body += strings.Repeat(" ", MaxMintBody-len(body))
	if code, name, _ := ts.mintRefusal(t, jwt, body); code != 200 {
		t.Fatalf("a body of MaxMintBody bytes: %d %q, want 200", code, name)
	}
	if code, name, _ := ts.mintRefusal(t, jwt, body+" "); code != 413 || name != "request_too_large" {
		t.Fatalf("a body of MaxMintBody+1 bytes: %d %q, want 413 request_too_large", code, name)
	}
}
