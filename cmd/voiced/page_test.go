package main

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// pageMux routes the page (servePage) on a fresh mux: the routes exactly as voiced serve puts them.
func pageMux(t *testing.T) *http.ServeMux {
	t.Helper()
	app := &App{mux: http.NewServeMux()}
	if err := servePage(app); err != nil {
		t.Fatal(err)
	}
	return app.mux
}

func get(t *testing.T, mux http.Handler, method, target string, header http.Header) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, req)
	return rec
}

// assetURLs are the /page/ URLs index.html names (src= and href= and data-worklet=).
var assetURLs = regexp.MustCompile(`(?:src|href|data-worklet)="(/page/[^"]+)"`)

func TestPageRoutes(t *testing.T) {
	mux := pageMux(t)
	index := get(t, mux, "GET", "/", nil)
	urls := assetURLs.FindAllStringSubmatch(index.Body.String(), -1)
	if len(urls) != 3 {
		t.Fatalf("index.html names %d /page/ assets, want 3 (css, js, worklet):\n%s", len(urls), index.Body)
	}
	versioned := map[string]string{} // name → URL with ?v=
	for _, u := range urls {
		name := strings.TrimPrefix(strings.SplitN(u[1], "?", 2)[0], "/page/")
		versioned[name] = strings.ReplaceAll(u[1], "&amp;", "&")
	}
	tests := []struct {
		name, method, target string
		status               int
		contentType, cache   string
	}{
		{"index", "GET", "/", 200, "text/html; charset=utf-8", "no-cache"},
		{"index HEAD", "HEAD", "/", 200, "text/html; charset=utf-8", "no-cache"},
		{"script at its version", "GET", versioned["page.js"], 200, "text/javascript; charset=utf-8", immutable},
		{"worklet at its version", "GET", versioned["capture.js"], 200, "text/javascript; charset=utf-8", immutable},
		{"style at its version", "GET", versioned["page.css"], 200, "text/css; charset=utf-8", immutable},
		{"script without a version", "GET", "/page/page.js", 200, "text/javascript; charset=utf-8", "no-cache"},
		{"script at an old version", "GET", "/page/page.js?v=000000000000", 200, "text/javascript; charset=utf-8", "no-cache"},
		{"unknown asset", "GET", "/page/nope.js", 404, "", ""},
		{"index is not an asset", "GET", "/page/index.html", 404, "", ""},
		{"no directory listing", "GET", "/page/", 404, "", ""},
		{"no path escape", "GET", "/page/..%2fpage.go", 404, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := get(t, mux, tc.method, tc.target, nil)
			if rec.Code != tc.status {
				t.Fatalf("%s %s: %d, want %d", tc.method, tc.target, rec.Code, tc.status)
			}
			if tc.status != 200 {
				return
			}
			h := rec.Header()
			if got := h.Get("Content-Type"); got != tc.contentType {
				t.Errorf("Content-Type %q, want %q", got, tc.contentType)
			}
			if got := h.Get("Cache-Control"); got != tc.cache {
				t.Errorf("Cache-Control %q, want %q", got, tc.cache)
			}
			if got := h.Get("Content-Security-Policy"); got != pageCSP {
				t.Errorf("Content-Security-Policy %q, want %q", got, pageCSP)
			}
			if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("ETag") == "" {
				t.Errorf("nosniff %q, ETag %q", h.Get("X-Content-Type-Options"), h.Get("ETag"))
			}
			if tc.method == "GET" && rec.Body.Len() == 0 {
				t.Error("empty body")
			}
			// Revalidation answers 304 with no body.
			again := get(t, mux, tc.method, tc.target, http.Header{"If-None-Match": {h.Get("ETag")}})
			if again.Code != http.StatusNotModified || again.Body.Len() != 0 {
				t.Errorf("If-None-Match %s: %d with %d bytes, want 304 and none", h.Get("ETag"), again.Code, again.Body.Len())
			}
		})
	}
}

// The CSP forbids inline code: the page must hold none, and must load nothing from elsewhere.
func TestPageHasNoInlineCode(t *testing.T) {
	body := get(t, pageMux(t), "GET", "/", nil).Body.String()
	forbidden := []struct{ name, pattern string }{
		{"inline script", `<script(?:\s[^>]*)?>\s*[^<\s]`},
		{"inline style element", `<style`},
		{"style attribute", `\sstyle=`},
		{"event handler attribute", `\son[a-z]+=`},
		{"javascript: URL", `javascript:`},
		{"another origin", `(?:src|href)="(?:https?:)?//`},
	}
	for _, f := range forbidden {
		if m := regexp.MustCompile(f.pattern).FindString(body); m != "" {
			t.Errorf("%s in index.html: %q", f.name, m)
		}
	}
	for _, tag := range regexp.MustCompile(`<script[^>]*>`).FindAllString(body, -1) {
		if !strings.Contains(tag, ` src="/page/`) {
			t.Errorf("script element without a /page/ src: %s", tag)
		}
	}
	for _, name := range []string{"page.js", "capture.js"} {
		js := get(t, pageMux(t), "GET", "/page/"+name, nil).Body.String()
		for _, bad := range []string{"eval(", "new Function", "innerHTML", "http://", "https://"} {
			if strings.Contains(js, bad) {
				t.Errorf("%s contains %q", name, bad)
			}
		}
	}
}
