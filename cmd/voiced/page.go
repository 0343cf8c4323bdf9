package main

import (
	"context"
	"net/http"
)

// The page component serves GET / (no auth). This is a placeholder until the browser page
// (microphone → realtime socket → speaker) lands; its author replaces this file.
func init() {
	register("page", orderCore, func() *component {
		return &component{
			start: func(ctx context.Context, app *App) error {
				app.HandlePublic("GET /{$}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "text/html; charset=utf-8")
					w.Write([]byte(placeholderPage))
				}))
				return nil
			},
		}
	})
}

const placeholderPage = `<!doctype html><meta charset="utf-8"><title>voiced</title>
<p>voiced is running. <a href="/health">/health</a></p>
`
