package tests

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voiced/voiced/audio"
)

// rssKiB is the server process's resident set (VmRSS in /proc/PID/status), in KiB.
func (s *server) rssKiB(t testing.TB) int {
	t.Helper()
	return s.statusKiB(t, "VmRSS:")
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
	// The event rate limit off: this test proves each hostile event is handled one for one;
	// TestFaultsEventRate proves the limit.
	s := startRealtime(t, serverOpts{Args: []string{"--event-rate", "0"}})
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

// TestFaultsAudioFlood sends audio at 100× real time in 20 ms appends (what Twilio-style clients
// send, only far faster): under server_vad (real speech, so turns are found, committed and
// transcribed) and with client commits (nothing is committed until the end: the buffer holds all
// of it). The server must slow the sender (the read loop hears each append before reading the
// next: TCP backpressure) or refuse by name; its RSS is sampled while the flood runs and must stay
// bounded; the socket answers a text turn after. Measured figures are logged.
func TestFaultsAudioFlood(t *testing.T) {
	checkLeaks(t)
	speech := sileroSpeech(t, "samples.pcm")
	s := startRealtime(t, serverOpts{})
	const speedup = 100
	const floodAudio = 60 * time.Second
	const frame = 480 // 20 ms at 24 kHz
	var clip []int16  // the speech, then a second of silence so that server_vad ends the turn
	clip = append(append(clip, speech...), silence24k(1)...)

	for _, tt := range []struct {
		name string
		td   any
	}{
		{"server_vad", map[string]any{"type": "server_vad", "threshold": 0.5, "prefix_padding_ms": 300,
			"silence_duration_ms": 500, "create_response": false}},
		{"client commits", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := s.dialRealtime(t, s.jwt("faults-flood-"+randHex(4), ""), true)
			c.until("session.created", nil)
			c.send(betaSessionUpdate(tt.td))
			c.until("session.updated", nil)
			// 60 s of 24 kHz PCM16 is 2.7 MiB on the wire; held as the client's bytes plus 16 kHz
			// float32 it is 6.4 MiB. 256 MiB is far above that and far below a buffer without a bound.
			done := s.memoryGuard(t, 256)
			frames := int(floodAudio / (20 * time.Millisecond))
			start := time.Now()
			for i := range frames {
				// Pace at speedup× real time at most: frame i is due at i × 20 ms / speedup.
				if due := time.Duration(i) * 20 * time.Millisecond / speedup; time.Since(start) < due {
					time.Sleep(due - time.Since(start))
				}
				at := (i * frame) % (len(clip) - frame)
				c.send(map[string]any{"type": "input_audio_buffer.append",
					"audio": base64.StdEncoding.EncodeToString(audio.Int16ToBytes(clip[at : at+frame]))})
			}
			sent := time.Since(start)
			if tt.td == nil {
				c.send(map[string]any{"type": "input_audio_buffer.clear"})
			}
			errs, others, tr := turnAfter(t, c, "Hello after the flood.")
			heard := time.Since(start)
			growth := done()
			if len(errs) != 0 {
				t.Errorf("%d error events, want none: audio faster than real time is not an error (a file may be uploaded at once); first: %s", len(errs), firstRaw(errs))
			}
			if tr == "" {
				t.Errorf("the text turn after the flood was not answered")
			}
			t.Logf("%v of audio sent in %v (%.0f× real time asked, %.0f× achieved: the server's reading paces the sender); "+
				"heard through the text turn after in %v (%.0f×); %d turns committed; peak RSS +%d MiB",
				floodAudio, sent.Round(time.Millisecond), float64(speedup), floodAudio.Seconds()/sent.Seconds(),
				heard.Round(time.Millisecond), floodAudio.Seconds()/heard.Seconds(), others["input_audio_buffer.committed"],
				growth)
			if tt.td != nil && others["input_audio_buffer.committed"] == 0 {
				t.Errorf("server_vad committed no turn of the speech in the flood")
			}
			c.checkStrict()
			c.close()
		})
	}
	s.stop()
}

// TestFaultsEventRate runs the built binary with the default event rate limit (100/s, 500 at once).
// A client behaving like a real one (20 ms appends of real speech paced at real time: 50 a
// second, a session.update, an item.retrieve after each committed turn) never hits it; a burst of
// 2000 session.updates gets the first 500 answered, then rate_limit_exceeded errors naming each
// dropped event, then the close 1008 once it has sent more than twice its allowance.
func TestFaultsEventRate(t *testing.T) {
	checkLeaks(t)
	s := startRealtime(t, serverOpts{})
	speech := sileroSpeech(t, "samples.pcm")

	t.Run("normal client at 50 appends a second", func(t *testing.T) {
		c := s.dialRealtime(t, s.jwt("faults-rate-"+randHex(4), ""), true)
		c.until("session.created", nil)
		td := map[string]any{"type": "server_vad", "threshold": 0.5, "prefix_padding_ms": 300,
			"silence_duration_ms": 500, "create_response": false}
		c.send(betaSessionUpdate(td))
		c.until("session.updated", nil)
		clip := append(append(silence24k(0.3), speech...), silence24k(1)...)
		const frame = 480 // 20 ms
		start := time.Now()
		var appends, retrieves, committed int
		for i := 0; i+frame <= len(clip); i += frame {
			if due := time.Duration(appends) * 20 * time.Millisecond; time.Since(start) < due {
				time.Sleep(due - time.Since(start))
			}
			c.send(map[string]any{"type": "input_audio_buffer.append",
				"audio": base64.StdEncoding.EncodeToString(audio.Int16ToBytes(clip[i : i+frame]))})
			appends++
			for drained := false; !drained; { // what arrived so far, without waiting
				select {
				case ev, ok := <-c.events:
					if !ok {
						t.Fatalf("the socket ended after %d appends", appends)
					}
					switch ev.Type {
					case "error":
						t.Fatalf("error event after %d appends at 50 a second: %s", appends, ev.Raw)
					case "input_audio_buffer.committed":
						committed++
						retrieves++
						c.send(map[string]any{"type": "conversation.item.retrieve", "item_id": ev.str("item_id")})
					}
				default:
					drained = true
				}
			}
		}
		errs, _, tr := turnAfter(t, c, "Still here?")
		if len(errs) != 0 {
			t.Errorf("%d error events for a normal client; first: %s", len(errs), firstRaw(errs))
		}
		if tr == "" || committed == 0 {
			t.Errorf("turns committed %d, text turn transcript %q", committed, tr)
		}
		t.Logf("%d appends over %v (%.0f a second), %d turns committed, %d item.retrieve: no rate_limit_exceeded",
			appends, time.Since(start).Round(time.Millisecond), float64(appends)/time.Since(start).Seconds(), committed, retrieves)
		c.close()
	})

	t.Run("burst of 2000 session.updates", func(t *testing.T) {
		c := s.dialRealtime(t, s.jwt("faults-rate-"+randHex(4), ""), true)
		c.until("session.created", nil)
		for i := range 2000 {
			b := fmt.Sprintf(`{"type":"session.update","event_id":"evt_u%d","session":{"instructions":"n %d"}}`, i, i)
			if err := c.conn.Write(ctxT(t, 10*time.Second), websocket.MessageText, []byte(b)); err != nil {
				t.Logf("write %d: %v (closed by the server)", i, err)
				break
			}
		}
		var updated, limited int
		var first, last rtEvent
		for {
			ev, ok := c.next(30 * time.Second)
			if !ok {
				break
			}
			switch {
			case ev.Type == "session.updated":
				updated++
			case ev.Type == "error" && ev.str("error", "code") == "rate_limit_exceeded":
				if limited == 0 {
					first = ev
				}
				last = ev
				limited++
			default:
				t.Errorf("unexpected %s", ev.Raw)
			}
		}
		c.mu.Lock()
		readErr := c.readErr
		c.mu.Unlock()
		t.Logf("2000 session.updates at once: %d answered, %d refused rate_limit_exceeded, then %v; first refusal %s",
			updated, limited, readErr, first.Raw)
		// The bucket refills while the burst is read (100 a second): a little over 500 each.
		if updated < 500 || updated > 700 || limited < 500 || limited > 700 {
			t.Errorf("%d answered and %d refused, want about 500 of each", updated, limited)
		}
		var n int // the bucket refills while the burst is read: refusals and answers interleave after the 500th
		if _, err := fmt.Sscanf(first.str("error", "event_id"), "evt_u%d", &n); err != nil || n < 500 || first.str("error", "type") != "invalid_request_error" {
			t.Errorf("first refusal %s, want invalid_request_error naming an event past the 500th", first.Raw)
		}
		if last.str("error", "message") == "" || websocket.CloseStatus(readErr) != websocket.StatusPolicyViolation {
			t.Errorf("the socket ended with %v, want close 1008 after the refusals", readErr)
		}
	})
	s.stop()
}

// TestFaultsItemFlood: conversation.item.create with 4 MiB of text, 40 times (160 MiB, well within
// the event rate). Audio items count toward --session-limit; text did not count toward anything,
// so the conversation kept all of it. The conversation's text is bounded: past the bound an
// item.create is refused by name and the server's RSS stays bounded; deleting items makes room.
func TestFaultsItemFlood(t *testing.T) {
	checkLeaks(t)
	// The byte budget off (160 MiB of events): this test proves the conversation's cap.
	s := startRealtime(t, serverOpts{Args: []string{"--event-bytes", "0"}})
	c := s.dialRealtime(t, s.jwt("faults-items-"+randHex(4), ""), true)
	c.until("session.created", nil)
	base := s.rssKiB(t)
	text := strings.Repeat("words ", (4<<20)/6)
	var added []string
	var refused []rtEvent
	for i := range 40 {
		c.send(map[string]any{"type": "conversation.item.create", "event_id": fmt.Sprintf("evt_item%d", i), "item": map[string]any{
			"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": text}}}})
		ev, ok := c.next(30 * time.Second)
		if !ok {
			t.Fatalf("the socket ended after %d items", i)
		}
		switch ev.Type {
		case "conversation.item.created":
			added = append(added, ev.str("item", "id"))
		case "error":
			refused = append(refused, ev)
		default:
			t.Fatalf("item %d: %s", i, ev.Raw)
		}
	}
	peak := s.rssKiB(t)
	t.Logf("40 items of 4 MiB text: %d added, %d refused (first: %s); RSS %d → %d MiB",
		len(added), len(refused), firstRaw(refused), base>>10, peak>>10)
	if len(refused) == 0 || refused[0].str("error", "code") != "conversation_too_large" ||
		refused[0].str("error", "type") != "invalid_request_error" || refused[0].str("error", "event_id") == "" {
		t.Errorf("no item.create refused conversation_too_large (invalid_request_error naming its event) after %d items", len(added))
	}
	if growth := (peak - base) >> 10; growth > 256 {
		t.Errorf("server RSS grew %d MiB for the items, want < 256 MiB", growth)
	}
	if len(added) > 0 { // deleting an item makes room for another
		c.send(map[string]any{"type": "conversation.item.delete", "item_id": added[0]})
		c.until("conversation.item.deleted", nil)
		c.send(map[string]any{"type": "conversation.item.create", "item": map[string]any{
			"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": text}}}})
		c.until("conversation.item.created", nil)
	}
	c.checkStrict()
	c.close()
	s.stop()
}
