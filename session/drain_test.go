package session

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/internal/testkit"
)

// A server that drains lets an out-of-band reply in flight finish, as it does the conversation's
// own: the reply's response.done reaches the client before server_shutting_down and the 1001.
func TestDrainWaitsForOutOfBandReply(t *testing.T) {
	testkit.CheckLeaks(t)
	gate := make(chan struct{})
	sockets := door.NewSockets()
	ts := newTestServer(t, Config{Sockets: sockets, Engines: Engines{Ears: fakeEars{"words"}, Voice: fakeVoice{gate: gate}}})
	c := ts.open(t)
	c.send(map[string]any{"type": "conversation.item.create", "item": map[string]any{"type": "message", "role": "user",
		"content": []any{map[string]any{"type": "input_text", "text": "hello"}}}})
	c.until("conversation.item.done")
	c.send(map[string]any{"type": "response.create", "response": map[string]any{"conversation": "none"}})
	c.until("response.created") // the reply is registered before it is announced

	shut := make(chan [2]int, 1)
	go func() {
		grace, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		a, b := sockets.Shutdown(grace, time.Second)
		shut <- [2]int{a, b}
	}()

	// One reader for the rest of the socket (a read whose context ends closes a coder/websocket).
	type read struct {
		ev  map[string]any
		raw string
		err error
	}
	reads := make(chan read, 64)
	go func() {
		defer close(reads)
		for {
			_, b, err := c.conn.Read(context.Background())
			if err != nil {
				reads <- read{err: err}
				return
			}
			var ev map[string]any
			json.Unmarshal(b, &ev)
			reads <- read{ev: ev, raw: string(b)}
		}
	}()

	// While the reply is held, the drain must not end the conversation.
	hold := time.After(300 * time.Millisecond)
	for held := true; held; {
		select {
		case r := <-reads:
			if r.err != nil || r.ev["type"] == "error" || r.ev["type"] == "response.done" {
				t.Fatalf("the drain ended the conversation while its out-of-band reply was held: %s %v", r.raw, r.err)
			}
		case <-hold:
			held = false
		}
	}

	close(gate)
	var seen []string
	for r := range reads {
		if r.err != nil {
			if websocket.CloseStatus(r.err) != websocket.StatusGoingAway {
				t.Fatalf("after the drain: %v, want close 1001", r.err)
			}
			break
		}
		typ, _ := r.ev["type"].(string)
		switch typ {
		case "response.done":
			if st := r.ev["response"].(map[string]any)["status"]; st != "completed" {
				t.Fatalf("out-of-band reply ended %v, want completed", st)
			}
		case "error":
			typ += ":" + r.ev["error"].(map[string]any)["code"].(string)
		default:
			continue
		}
		seen = append(seen, typ)
	}
	if want := []string{"response.done", "error:" + codeShuttingDown}; strings.Join(seen, ",") != strings.Join(want, ",") {
		t.Fatalf("events %v, want %v then close 1001", seen, want)
	}
	if got := <-shut; got != [2]int{0, 0} {
		t.Fatalf("Shutdown cancelled %d, stuck %d; want the socket to leave by itself", got[0], got[1])
	}
}
