package door

import (
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strings"
)

// Origins is the one origin policy of every socket and browser route (--allow-origin): a request
// without an Origin header (not a browser) passes, a page served by this host passes, and any other
// page passes only when an entry matches it. An entry is "*" (any page), a full origin
// "https://app.example.com" (scheme and host, a glob: "https://*.example.com"), or a host pattern
// "app.example.com" / "*.example.com" (any scheme). Matching ignores case.
type Origins struct {
	entries []string // lower case
}

// ParseOrigins reads --allow-origin's entries (surrounding spaces and empty entries dropped); an
// entry that is not a valid pattern is an error naming it.
func ParseOrigins(list []string) (Origins, error) {
	var o Origins
	for _, e := range list {
		e = strings.ToLower(strings.TrimSpace(e))
		if e == "" {
			continue
		}
		e = strings.TrimSuffix(e, "/")
		if _, err := path.Match(e, ""); err != nil {
			return Origins{}, fmt.Errorf("--allow-origin %q is not a valid pattern: %w", e, err)
		}
		if scheme, host, ok := strings.Cut(e, "://"); ok && (scheme == "" || host == "" || strings.Contains(host, "/")) {
			return Origins{}, fmt.Errorf("--allow-origin %q: an origin is scheme://host[:port], with no path", e)
		}
		o.entries = append(o.entries, e)
	}
	return o, nil
}

// Entries returns the parsed entries (lower case).
func (o Origins) Entries() []string { return append([]string(nil), o.entries...) }

// Allowed reports whether r may be served: no Origin, this host's own page, or a matching entry.
func (o Origins) Allowed(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true // not a browser
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	if strings.EqualFold(u.Host, r.Host) {
		return true
	}
	full := strings.ToLower(u.Scheme + "://" + u.Host)
	host := strings.ToLower(u.Host)
	for _, e := range o.entries {
		target := host
		if strings.Contains(e, "://") {
			target = full
		}
		if e == "*" {
			return true
		}
		if ok, _ := path.Match(e, target); ok {
			return true
		}
	}
	return false
}

// Check returns ErrOriginNotAllowed, naming the page's origin, when r may not be served.
func (o Origins) Check(r *http.Request) error {
	if o.Allowed(r) {
		return nil
	}
	return Refuse(ErrOriginNotAllowed, fmt.Sprintf("origin %q may not open sockets here (start voiced with --allow-origin)", r.Header.Get("Origin")))
}

// MustOrigins is ParseOrigins for fixed lists (tests, defaults); it panics on a bad pattern.
func MustOrigins(list ...string) Origins {
	o, err := ParseOrigins(list)
	if err != nil {
		panic(err)
	}
	return o
}
