package meter

import (
	"errors"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"
)

// FuzzParseFilter: any query of GET /v1/usage is either a filter that holds together or a
// refusal wrapping ErrBadFilter (the handler's 400 bad_usage_filter); never a panic.
func FuzzParseFilter(f *testing.F) {
	now := time.Date(2026, 2, 28, 23, 59, 0, 0, time.UTC)
	f.Add("principal=alice&org=acme&from=2026-01-01&to=2026-01-31")
	f.Add("period=day")
	f.Add("period=month&principal=bob")
	f.Add("from=2026-02-30")
	f.Add("from=2026-03-01&to=2026-02-01")
	f.Add("period=week")
	f.Add("from=%zz&to=;;")
	f.Add("to=2026-1-2")
	f.Fuzz(func(t *testing.T, query string) {
		r := httptest.NewRequest("GET", "/v1/usage", nil)
		r.URL.RawQuery = query
		flt, err := ParseFilter(r, now)
		q, _ := url.ParseQuery(query)
		if err != nil {
			if !errors.Is(err, ErrBadFilter) || err.Error() == "" {
				t.Fatalf("%q: error %v does not wrap ErrBadFilter", query, err)
			}
			return
		}
		if flt.Principal != q.Get("principal") || flt.Org != q.Get("org") {
			t.Fatalf("%q: principal %q org %q, want the query's", query, flt.Principal, flt.Org)
		}
		for name, got := range map[string]time.Time{"from": flt.From, "to": flt.To} {
			if s := q.Get(name); s != "" && got.Format(time.DateOnly) != s {
				t.Fatalf("%q: %s=%q read as %s", query, name, s, got.Format(time.DateOnly))
			}
		}
		if !flt.From.IsZero() && !flt.To.IsZero() && flt.To.Before(flt.From) {
			t.Fatalf("%q: to %s before from %s accepted", query, flt.To, flt.From)
		}
		switch p := q.Get("period"); p {
		case "", "day", "month":
		default:
			t.Fatalf("%q: period=%q accepted", query, p)
		}
		if q.Get("period") != "" && q.Get("from") == "" && q.Get("to") == "" && (flt.From.IsZero() || flt.To.IsZero() || flt.From.After(now)) {
			t.Fatalf("%q: a period without from/to gave from %s to %s", query, flt.From, flt.To)
		}
	})
}
