package tests

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// rssKiB is the server process's resident set (VmRSS in /proc/PID/status), in KiB.
func (s *server) rssKiB(t testing.TB) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		t.Fatalf("server status: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", s.cmd.Process.Pid)
	return 0
}

// turnAfter sends a text turn and reads through its response.done, returning the error events
// that came first (the refusals of what was sent before) and the turn's transcript.
func turnAfter(t testing.TB, c *rtConn, text string) (errs []rtEvent, others map[string]int, transcript string) {
	t.Helper()
	c.send(textItem(text))
	c.send(map[string]any{"type": "response.create"})
	others = map[string]int{}
	var evs []rtEvent
	for {
		ev, ok := c.next(60 * time.Second)
		if !ok {
			c.mu.Lock()
			err := c.readErr
			c.mu.Unlock()
			t.Fatalf("the socket ended (%v) after %d errors; the session must stay open", err, len(errs))
		}
		switch ev.Type {
		case "error":
			errs = append(errs, ev)
		case "response.done":
			if st := ev.str("response", "status"); st != "completed" {
				t.Fatalf("the text turn after: response.done status %q", st)
			}
			return errs, others, replyTranscript(evs)
		default:
			others[ev.Type]++
			evs = append(evs, ev)
		}
	}
}

// TestFaultsHostileInput: oversized and malformed client events are each refused by name (an
// invalid_request_error event) and the session stays open and answers a text turn after; a flood
// of unknown events and a thousand session.updates are answered one for one, never a crash, and
// the server's RSS stays bounded.
func TestFaultsHostileInput(t *testing.T) {
	checkLeaks(t)
	s := startRealtime(t, serverOpts{})
	c := s.dialRealtime(t, s.jwt("faults-hostile-"+randHex(4), ""), true)
	c.until("session.created", nil)
	c.send(betaSessionUpdate(nil))
	c.until("session.updated", nil)
	baseRSS := s.rssKiB(t)
	const rssBound = 1 << 20 // KiB: 1 GiB

	raw := func(b []byte) {
		t.Helper()
		if err := c.conn.Write(ctxT(t, 60*time.Second), websocket.MessageText, b); err != nil {
			t.Fatalf("send %d bytes: %v", len(b), err)
		}
	}
	nested := func(depth int, open, close string) string {
		return strings.Repeat(open, depth) + strings.Repeat(close, depth)
	}
	for _, tt := range []struct {
		name  string
		send  func()
		count int    // error events wanted
		code  string // the code every one carries ("" = any non-empty code)
	}{
		{"16 MiB+ base64 append", func() {
			var b bytes.Buffer
			b.WriteString(`{"type":"input_audio_buffer.append","audio":"`)
			b.Write(bytes.Repeat([]byte("AAAA"), (17<<20)/4))
			b.WriteString(`"}`)
			raw(b.Bytes())
		}, 1, "invalid_value"},
		{"invalid base64", func() {
			raw([]byte(`{"type":"input_audio_buffer.append","event_id":"evt_b64","audio":"!!not*base64~~"}`))
		}, 1, ""},
		{"100k-deep array", func() { raw([]byte(nested(100_000, "[", "]"))) }, 1, ""},
		{"100k-deep session", func() {
			raw([]byte(`{"type":"session.update","session":{"instructions":` + nested(100_000, `{"a":`, `}`) + `}}`))
		}, 1, ""},
		{"10k unknown event types", func() {
			for i := range 10_000 {
				raw([]byte(fmt.Sprintf(`{"type":"hostile.event.%d","event_id":"evt_%d"}`, i, i)))
			}
		}, 10_000, "invalid_value"}, // OpenAI's answer to an unknown type: "Invalid value: '…'. Supported values are: …"
		{"1000 session.updates", func() {
			for i := range 1000 {
				raw([]byte(fmt.Sprintf(`{"type":"session.update","event_id":"evt_u%d","session":{"instructions":"Be brief, number %d."}}`, i, i)))
			}
		}, 0, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.send()
			errs, others, tr := turnAfter(t, c, "Hello again.")
			if len(errs) != tt.count {
				t.Errorf("%d error events, want %d; first: %v", len(errs), tt.count, firstRaw(errs))
			}
			for _, e := range errs {
				if e.str("error", "type") != "invalid_request_error" || e.str("error", "code") == "" || e.str("error", "message") == "" ||
					(tt.code != "" && e.str("error", "code") != tt.code) {
					t.Errorf("refusal %s, want invalid_request_error with code %q and a message", e.Raw, tt.code)
					break
				}
			}
			if tt.count == 10_000 && len(errs) == tt.count {
				for i, e := range errs { // one refusal per event, in order, each naming its event
					if got := e.str("error", "event_id"); got != fmt.Sprintf("evt_%d", i) {
						t.Errorf("refusal %d names event_id %q, want evt_%d", i, got, i)
						break
					}
				}
			}
			if len(errs) > 0 {
				t.Logf("refused: %s", errs[0].Raw)
			}
			if tt.name == "1000 session.updates" && others["session.updated"] != 1000 {
				t.Errorf("%d session.updated for 1000 session.update", others["session.updated"])
			}
			if tr == "" {
				t.Errorf("the text turn after was not answered (no transcript)")
			}
			if rss := s.rssKiB(t); rss > rssBound {
				t.Errorf("server RSS %d MiB after %s (%d MiB at the start), want < 1 GiB", rss>>10, tt.name, baseRSS>>10)
			} else {
				t.Logf("server RSS %d MiB (%d MiB at the start)", rss>>10, baseRSS>>10)
			}
		})
	}
	c.checkStrict()
	c.close()
	s.stop()
}

func firstRaw(evs []rtEvent) string {
	if len(evs) == 0 {
		return "none"
	}
	return string(evs[0].Raw)
}
