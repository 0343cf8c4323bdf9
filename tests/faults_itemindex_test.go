package tests

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestFaultsItemIndex (issue 18, item lookup): a conversation may hold ~100k small items within
// its 32 MiB, and every item.create (its id checked against the others), retrieve, truncate and
// delete compared the id with every item's: an item cost the server more the more there were, so
// filling a conversation cost CPU quadratic in its items (~1.5 ms an event at 90k items). Items
// are found by id through a map now. The bound: the server's CPU for the last quarter of 48k
// item.creates against the first quarter's.
func TestFaultsItemIndex(t *testing.T) {
	checkLeaks(t)
	// The event rate and the byte budget off: 48k events at once prove the lookup, not the limits.
	s := startRealtime(t, serverOpts{Args: []string{"--event-rate", "0", "--event-bytes", "0"}})
	c := s.dialRealtime(t, s.jwt("faults-item-index-"+randHex(4), ""), false)
	c.until("session.created", nil)
	const quarter = 12000
	var cpu [4]int
	for q := range 4 {
		before := s.cpuTicks(t)
		done := make(chan error, 1)
		go func() {
			ctx := ctxT(t, 5*time.Minute)
			for i := range quarter {
				n := q*quarter + i
				b := fmt.Appendf(nil, `{"type":"conversation.item.create","item":{"id":"item_%08d","type":"message","role":"user",`+
					`"content":[{"type":"input_text","text":"hi"}]}}`, n)
				if err := c.conn.Write(ctx, websocket.MessageText, b); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
		last := fmt.Sprintf("item_%08d", (q+1)*quarter-1)
		for {
			ev, ok := c.next(5 * time.Minute)
			if !ok {
				t.Fatalf("the socket ended in quarter %d", q)
			}
			if ev.Type == "error" {
				t.Fatalf("quarter %d: %.300s", q, ev.Raw)
			}
			if ev.Type == "conversation.item.done" && ev.str("item", "id") == last {
				break
			}
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		cpu[q] = s.cpuTicks(t) - before
	}
	t.Logf("server CPU for each 12k item.creates, as the conversation grows to 48k items: %v ms", []int{cpu[0] * 10, cpu[1] * 10, cpu[2] * 10, cpu[3] * 10})
	// Before: the last quarter cost ~5 times the first (quadratic). Now about the same.
	if ratio := float64(cpu[3]) / float64(max(cpu[0], 10)); ratio > 2 {
		t.Errorf("the last 12k items cost %.1f times the first 12k; want the cost of an item not to grow with the items", ratio)
	}
	// The first item is still found by id.
	c.send(map[string]any{"type": "conversation.item.retrieve", "item_id": "item_00000000"})
	if evs := c.until("conversation.item.retrieved", nil); !strings.Contains(string(evs[len(evs)-1].Raw), "item_00000000") {
		t.Errorf("retrieve: %s", evs[len(evs)-1].Raw)
	}
	c.checkStrict()
	c.close()
	s.stop()
}
