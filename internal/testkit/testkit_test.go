package testkit

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwt"
)

// recorder is a testing.TB whose cleanups the test runs and whose errors it reads.
type recorder struct {
	testing.TB
	cleanups []func()
	errors   []string
}

func (r *recorder) Helper()          {}
func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) finish() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

func TestLeaksSeesAGoroutineLeftRunning(t *testing.T) {
	r := &recorder{TB: t}
	stop := make(chan struct{})
	Leaks{Wait: 100 * time.Millisecond}.Check(r)
	done := make(chan struct{})
	go func() { <-stop; close(done) }()
	r.finish()
	close(stop)
	<-done
	if len(r.errors) != 1 || !strings.Contains(r.errors[0], "TestLeaksSeesAGoroutineLeftRunning") {
		t.Fatalf("errors %q, want one naming the leaked goroutine's stack", r.errors)
	}

	r = &recorder{TB: t}
	Leaks{Wait: 100 * time.Millisecond, Others: func() string { return "pid 7" }}.Check(r)
	r.finish()
	if len(r.errors) != 1 || !strings.Contains(r.errors[0], "pid 7") {
		t.Fatalf("errors %q, want one naming what else runs", r.errors)
	}

	r = &recorder{TB: t}
	settled := false
	Leaks{Settle: func() { settled = true }}.Check(r)
	go func() {}()
	r.finish()
	if len(r.errors) != 0 || !settled {
		t.Fatalf("errors %q settled %v, want none after Settle ran", r.errors, settled)
	}
}

func TestJWT(t *testing.T) {
	t.Parallel()
	secret := []byte("0123456789abcdef0123456789abcdef")
	exp := time.Now().Add(time.Hour).Truncate(time.Second)
	s := JWT(t, secret, map[string]any{"sub": "u", "org": "o", "exp": exp, "dropped": nil})
	tok, err := jwt.Parse([]byte(s), jwt.WithKey(jwa.HS256, secret))
	if err != nil {
		t.Fatal(err)
	}
	org, _ := tok.Get("org")
	if _, dropped := tok.Get("dropped"); tok.Subject() != "u" || org != "o" || !tok.Expiration().Equal(exp) || dropped {
		t.Fatalf("claims %v", tok.PrivateClaims())
	}
}

func TestLogBuffer(t *testing.T) {
	t.Parallel()
	var l LogBuffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { fmt.Fprint(&l, "x") })
	}
	wg.Wait()
	if l.String() != "xxxxxxxx" {
		t.Fatalf("%q", l.String())
	}
}
