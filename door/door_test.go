package door

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// door is the leaf every door shares: it must not grow an import of another voiced package, nor
// cgo (ONNX Runtime), or session would link the models again through it.
func TestLeafImports(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{.CgoFiles}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v: %s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, cgo, _ := strings.Cut(line, " ")
		if strings.HasPrefix(path, "github.com/voiced/voiced/") && path != "github.com/voiced/voiced/door" {
			t.Errorf("door imports %s: it must stay a leaf", path)
		}
		if strings.Contains(path, "onnxruntime") || (cgo != "[]" && !strings.HasPrefix(path, "runtime/") && path != "net" && path != "os/user") {
			t.Errorf("door links %s (cgo files %s)", path, cgo)
		}
	}
}

func TestOrigins(t *testing.T) {
	policy := MustOrigins("https://app.example.com", "*.trusted.test", "HTTP://Local.Test:3000/")
	tests := map[string]struct {
		origin string
		want   bool
	}{
		"not a browser":                 {"", true},
		"this host's own page":          {"http://voiced.local:8200", true},
		"listed origin":                 {"https://app.example.com", true},
		"listed origin, other case":     {"https://APP.example.com", true},
		"listed origin, other scheme":   {"http://app.example.com", false},
		"listed origin, other port":     {"https://app.example.com:8443", false},
		"host pattern, any scheme":      {"http://a.trusted.test", true},
		"host pattern, not a subdomain": {"https://trusted.test", false},
		"full origin, trailing slash":   {"http://local.test:3000", true},
		"another site":                  {"https://evil.example", false},
		"lookalike suffix":              {"https://app.example.com.evil.test", false},
		"null origin (sandboxed page)":  {"null", false},
		"unparsable":                    {"http://[::1", false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "http://voiced.local:8200/v1/realtime", nil)
			if tc.origin != "" {
				r.Header.Set("Origin", tc.origin)
			}
			if got := policy.Allowed(r); got != tc.want {
				t.Fatalf("Allowed(%q) = %v, want %v", tc.origin, got, tc.want)
			}
			err := policy.Check(r)
			var ref *Refusal
			if tc.want != (err == nil) || (err != nil && (!errors.As(err, &ref) || ref.Name() != "origin_not_allowed" || ref.Status() != 403 || ref.Reason() != ReasonOrigin)) {
				t.Fatalf("Check(%q) = %v", tc.origin, err)
			}
		})
	}
	r := httptest.NewRequest("GET", "http://voiced.local/", nil)
	r.Header.Set("Origin", "https://anything.example")
	if !MustOrigins("*").Allowed(r) {
		t.Error(`"*" does not allow any page`)
	}
	if _, err := ParseOrigins([]string{"https://[bad"}); err == nil {
		t.Error("a malformed pattern was accepted")
	}
	if _, err := ParseOrigins([]string{"https://app.example.com/path"}); err == nil {
		t.Error("an origin with a path was accepted")
	}
}

func FuzzOrigins(f *testing.F) {
	f.Add("https://app.example", "*.example")
	f.Add("http://[::1", "x")
	f.Fuzz(func(t *testing.T, origin, pattern string) {
		policy, err := ParseOrigins([]string{pattern})
		if err != nil {
			return
		}
		r := httptest.NewRequest("GET", "http://voiced.local/v1/speak/stream", nil)
		r.Header.Set("Origin", origin)
		policy.Allowed(r) // must not panic
	})
}

func TestGate(t *testing.T) {
	full := NewRefusal(429, "full", "").WithReason(ReasonCap)
	keyFull := NewRefusal(429, "key_full", "").WithReason(ReasonTenantCap)
	g := NewGate(3, full).PerKey(2, keyFull)
	a1, err := g.Acquire("a")
	if err != nil {
		t.Fatal(err)
	}
	a2, _ := g.Acquire("a")
	if _, err := g.Acquire("a"); err != keyFull {
		t.Fatalf("third for key a: %v, want key_full", err)
	}
	b1, err := g.Acquire("b")
	if err != nil {
		t.Fatal(err)
	}
	if !g.Full() || g.Open() != 3 {
		t.Fatalf("open %d full %v, want 3 and full", g.Open(), g.Full())
	}
	if _, err := g.Acquire("c"); err != full {
		t.Fatalf("past the cap: %v, want full", err)
	}
	a1()
	a1() // a second release does nothing
	if g.Open() != 2 {
		t.Fatalf("open %d after one release (twice), want 2", g.Open())
	}
	if rel, err := g.Acquire("a"); err != nil {
		t.Fatalf("key a after a release: %v", err)
	} else {
		rel()
	}
	a2()
	b1()
	if g.Open() != 0 || g.Full() {
		t.Fatalf("open %d after every release", g.Open())
	}
}

// ReadFrame: a frame over the limit is read through and reported (the socket goes on), one over
// the drain limit ends it, and the next frame after an oversize one is read whole.
func TestReadFrame(t *testing.T) {
	results := make(chan string, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		conn.SetReadLimit(-1)
		defer conn.CloseNow()
		for {
			_, data, err := ReadFrame(r.Context(), conn, 10, 100)
			switch {
			case errors.Is(err, ErrFrameTooLarge):
				results <- "too large"
			case errors.Is(err, ErrFrameOverDrain):
				results <- "over drain"
				return
			case err != nil:
				results <- "closed"
				return
			default:
				results <- string(data)
			}
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	for _, msg := range []string{"hello", strings.Repeat("x", 50), "again", strings.Repeat("y", 10), strings.Repeat("z", 500)} {
		if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{"hello", "too large", "again", strings.Repeat("y", 10), "over drain"} {
		select {
		case got := <-results:
			if got != want {
				t.Fatalf("got %q, want %q", got, want)
			}
		case <-ctx.Done():
			t.Fatalf("no result, want %q", want)
		}
	}
}

// A refusal is matched by name with errors.Is, through copies and wrapping, and a copy never
// changes the value it came from.
func TestRefusalIsByNameAndImmutable(t *testing.T) {
	base := NewRefusal(http.StatusTooManyRequests, "too_many", "slow down").WithReason(ReasonCap)
	later := base.WithMessage("slow down: 3 s").WithRetryAfter(3 * time.Second)
	if !errors.Is(fmt.Errorf("admit: %w", later), base) {
		t.Fatal("a copy with another message and Retry-After does not match its base")
	}
	if errors.Is(later, ErrShuttingDown) || errors.Is(errors.New("too_many: slow down"), base) {
		t.Fatal("a refusal matched another name, or a plain error matched a refusal")
	}
	if base.Message() != "slow down" || base.RetryAfter() != 0 || base.Reason() != ReasonCap || base.Status() != http.StatusTooManyRequests {
		t.Fatalf("the base changed: %v retry %v reason %q", base, base.RetryAfter(), base.Reason())
	}
	if later.Reason() != ReasonCap || later.Name() != "too_many" || later.RetryAfter() != 3*time.Second {
		t.Fatalf("the copy lost its fields: %v retry %v reason %q", later, later.RetryAfter(), later.Reason())
	}
}
