package main

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"time"
)

// servePage routes GET / (no auth, SPEC §3): a small browser page that opens the
// microphone, talks to /v1/voice and plays the answer, with the live transcript and latency
// figures. Its files are embedded (page/); nothing is fetched from anywhere else.
func servePage(app *App) error {
	p, err := newPage()
	if err != nil {
		return err
	}
	app.HandlePublic("GET /{$}", http.HandlerFunc(p.serveIndex))
	app.HandlePublic("GET /page/{name}", http.HandlerFunc(p.serveAsset))
	return nil
}

//go:embed page
var pageFiles embed.FS

// pageCSP allows only this server: scripts, the AudioWorklet module (a script-like destination,
// so script-src governs it), styles, and the fetch and WebSocket to /v1/voice (CSP3's 'self'
// covers ws: and wss: on the same host). No inline code anywhere.
const pageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
	"img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// immutable is how long an asset requested with its current version may be cached.
const immutable = "public, max-age=31536000, immutable"

// pageTypes are the content types of the page's files, fixed here rather than read from the
// machine's MIME database (which may call .js application/javascript or text/plain).
var pageTypes = map[string]string{
	".js":  "text/javascript; charset=utf-8",
	".css": "text/css; charset=utf-8",
}

type pageFile struct {
	body        []byte
	version     string // first 12 hex digits of sha256(body); the ETag and the ?v= of its URL
	contentType string
}

type page struct {
	index  pageFile
	assets map[string]pageFile // by file name under page/, index.html excluded
}

func newPage() (*page, error) {
	p := &page{assets: map[string]pageFile{}}
	entries, err := fs.ReadDir(pageFiles, "page")
	if err != nil {
		return nil, fmt.Errorf("read embedded page: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() || e.Name() == "index.html" {
			continue
		}
		b, err := pageFiles.ReadFile("page/" + e.Name())
		if err != nil {
			return nil, fmt.Errorf("read embedded page: %w", err)
		}
		ct, ok := pageTypes[path.Ext(e.Name())]
		if !ok {
			return nil, fmt.Errorf("embedded page file %s: no content type for its extension", e.Name())
		}
		p.assets[e.Name()] = newPageFile(b, ct)
	}
	tmpl, err := template.New("index.html").Funcs(template.FuncMap{
		"asset": func(name string) (string, error) {
			f, ok := p.assets[name]
			if !ok {
				return "", fmt.Errorf("page/index.html names %q, which page/ lacks", name)
			}
			return "/page/" + name + "?v=" + f.version, nil
		},
	}).ParseFS(pageFiles, "page/index.html")
	if err != nil {
		return nil, fmt.Errorf("parse page/index.html: %w", err)
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, nil); err != nil {
		return nil, fmt.Errorf("render page/index.html: %w", err)
	}
	p.index = newPageFile(b.Bytes(), "text/html; charset=utf-8")
	return p, nil
}

func newPageFile(b []byte, contentType string) pageFile {
	sum := sha256.Sum256(b)
	return pageFile{body: b, version: hex.EncodeToString(sum[:6]), contentType: contentType}
}

// serveIndex is GET /: revalidated on every load (no-cache + ETag), so a new build's asset
// versions reach the browser at once.
func (p *page) serveIndex(w http.ResponseWriter, r *http.Request) {
	p.serve(w, r, p.index, "no-cache")
}

// serveAsset is GET /page/{name}: cached for a year when asked for by its current version (the
// URLs index.html holds), revalidated otherwise.
func (p *page) serveAsset(w http.ResponseWriter, r *http.Request) {
	f, ok := p.assets[r.PathValue("name")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	cache := "no-cache"
	if r.URL.Query().Get("v") == f.version {
		cache = immutable
	}
	p.serve(w, r, f, cache)
}

func (p *page) serve(w http.ResponseWriter, r *http.Request, f pageFile, cache string) {
	h := w.Header()
	h.Set("Content-Type", f.contentType)
	h.Set("Cache-Control", cache)
	h.Set("ETag", `"`+f.version+`"`)
	h.Set("Content-Security-Policy", pageCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Permissions-Policy", "microphone=(self), camera=(self), geolocation=()")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(f.body))
}
