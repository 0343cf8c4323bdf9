package session

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestVerifierDefaultSkew: with no Skew configured, 30 s of clock skew are tolerated on exp (a
// token expired 20 s ago verifies, one expired 40 s ago is refused). Found by make mutate: the
// default could be lost or scaled wrong with every test passing (the other tests set Skew).
func TestVerifierDefaultSkew(t *testing.T) {
	clk := newClock()
	v, err := NewVerifier(context.Background(), VerifierConfig{Secret: testSecret, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	now := clk.Now()
	if _, err := v.Verify(token(t, clk, map[string]any{"exp": now.Add(-20 * time.Second).Unix()}), ""); err != nil {
		t.Fatalf("expired 20 s ago, within the default 30 s skew: %v", err)
	}
	if _, err := v.Verify(token(t, clk, map[string]any{"exp": now.Add(-40 * time.Second).Unix()}), ""); !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("expired 40 s ago, past the default 30 s skew: %v, want %s", err, ErrInvalidToken.Name())
	}
}
