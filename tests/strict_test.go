package tests

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestStrictClientCatches proves the raw-socket client's rules can fail: a scripted server sends
// each kind of event @openai/realtime-api-beta would choke on, and the checker must name it.
func TestStrictClientCatches(t *testing.T) {
	checkLeaks(t)
	good := `{"type":"conversation.item.created","event_id":"e1","item":{"id":"item_1","type":"message","role":"assistant","content":[]}}`
	cases := map[string]struct {
		events []string
		want   string // "" = no violation
	}{
		"clean": {[]string{good,
			`{"type":"response.created","event_id":"e2","response":{"id":"r","output":[]}}`,
			`{"type":"response.audio.delta","event_id":"e3","item_id":"item_1","delta":""}`,
			`{"type":"response.output_item.done","event_id":"e4","item":{"id":"item_1","type":"message","content":[]}}`}, ""},
		"no event_id":           {[]string{`{"type":"session.created","session":{}}`}, "session.created without event_id"},
		"empty event_id":        {[]string{`{"type":"session.created","event_id":"","session":{}}`}, "without event_id"},
		"item named before":     {[]string{`{"type":"response.content_part.added","event_id":"e","item_id":"item_9"}`, good}, `names item "item_9" before conversation.item.created`},
		"item done before":      {[]string{`{"type":"response.output_item.done","event_id":"e","item":{"id":"item_1","type":"message","content":[]}}`, good}, "before conversation.item.created"},
		"content missing":       {[]string{`{"type":"conversation.item.created","event_id":"e","item":{"id":"i","type":"message","role":"user"}}`}, "without content: []"},
		"content null":          {[]string{`{"type":"response.output_item.added","event_id":"e","item":{"id":"i","type":"message","content":null}}`}, "without content: []"},
		"arguments missing":     {[]string{`{"type":"conversation.item.created","event_id":"e","item":{"id":"f","type":"function_call","name":"x"}}`}, "without arguments string"},
		"response output null":  {[]string{`{"type":"response.created","event_id":"e","response":{"id":"r","output":null}}`}, "response.created without output: []"},
		"response output ahead": {[]string{`{"type":"response.created","event_id":"e","response":{"id":"r","output":[{"id":"x"}]}}`}, "response.created without output: []"},
		"not JSON":              {[]string{`{"type":`}, "not JSON"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				conn, err := websocket.Accept(w, r, nil)
				if err != nil {
					return
				}
				defer conn.CloseNow()
				for _, ev := range tc.events {
					if conn.Write(r.Context(), websocket.MessageText, []byte(ev)) != nil {
						return
					}
				}
				conn.Close(websocket.StatusNormalClosure, "")
			}))
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
			if err != nil {
				t.Fatal(err)
			}
			c := newRTConn(t, conn, true)
			for range c.events { // drain until the server closes
			}
			<-c.done
			c.mu.Lock()
			got := strings.Join(c.violations, "; ")
			c.mu.Unlock()
			switch {
			case tc.want == "" && got != "":
				t.Fatalf("clean events flagged: %s", got)
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Fatalf("violations %q, want one containing %q", got, tc.want)
			}
		})
	}
}
