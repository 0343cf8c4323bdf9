package tests

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// cpuTicks is the server process's CPU time so far (utime + stime in /proc/PID/stat), in clock
// ticks (USER_HZ: 100 a second on Linux).
func (s *server) cpuTicks(t testing.TB) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		t.Fatalf("server stat: %v", err)
	}
	// The command name (field 2) is in parentheses and may hold spaces: count from after it.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	utime, err1 := strconv.Atoi(f[11]) // field 14
	stime, err2 := strconv.Atoi(f[12]) // field 15
	if err1 != nil || err2 != nil {
		t.Fatalf("server stat: %q", b)
	}
	return utime + stime
}

// TestFaultsEventBytes (issue 18, the CPU of large events): decoding one 12 MiB response.create
// costs the server most of a second of CPU (encoding/json passes over it several times), and the
// event rate counted events, not bytes: one client kept a core busy at any event rate, and a
// client that was closed for it reconnected with a fresh allowance. Every client event but an
// append now spends its bytes from its principal's budget before it is decoded (1 MiB a second,
// 16 MiB at once); over it the event is refused by name without being decoded
// (rate_limit_exceeded, naming its event_id), and a connection that keeps sending past twice the
// allowance is closed 1008. The bound: the CPU the server spends on a flood of 12 MiB events over
// three connections of one principal, against the CPU of decoding one such event.
func TestFaultsEventBytes(t *testing.T) {
	checkLeaks(t)
	s := startRealtime(t, serverOpts{})
	big := func(id string) []byte {
		return fmt.Appendf(nil, `{"type":"response.create","event_id":%q,"response":{"instructions":"%s"}}`, id, strings.Repeat("x", 12<<20))
	}

	// One event's decode, on a principal of its own: refused by its bound, after decoding.
	c := s.dialRealtime(t, s.jwt("faults-bytes-one-"+randHex(4), ""), true)
	c.until("session.created", nil)
	event := big("evt_one")
	before := s.cpuTicks(t)
	if err := c.conn.Write(ctxT(t, 30*time.Second), websocket.MessageText, event); err != nil {
		t.Fatal(err)
	}
	if ev, _ := c.next(60 * time.Second); ev.str("error", "code") != "string_above_max_length" {
		t.Fatalf("one 12 MiB response.create: %.300s, want string_above_max_length", ev.Raw)
	}
	one := s.cpuTicks(t) - before
	c.close()

	// The flood: one principal, three connections one after the other, 8 events each, sent
	// without waiting for the answers.
	const conns, perConn = 3, 8
	jwt := s.jwt("faults-bytes-flood-"+randHex(4), "")
	var decoded, limited, closed int
	before = s.cpuTicks(t)
	began := time.Now()
	for i := range conns {
		c := s.dialRealtime(t, jwt, true)
		c.until("session.created", nil)
		var writer sync.WaitGroup
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		writer.Go(func() {
			for j := range perConn {
				if c.conn.Write(ctx, websocket.MessageText, big(fmt.Sprintf("evt_%d_%d", i, j))) != nil {
					return // closed by the server
				}
			}
		})
		for answered := 0; answered < perConn; {
			ev, ok := c.next(5 * time.Minute)
			if !ok {
				break
			}
			answered++
			switch code := ev.str("error", "code"); code {
			case "string_above_max_length":
				decoded++
			case "rate_limit_exceeded":
				limited++
				if !strings.HasPrefix(ev.str("error", "event_id"), fmt.Sprintf("evt_%d_", i)) || ev.str("error", "type") != "invalid_request_error" {
					t.Errorf("refusal %.300s, want invalid_request_error naming the event", ev.Raw)
				}
			default:
				t.Fatalf("connection %d: %.300s", i, ev.Raw)
			}
		}
		c.mu.Lock()
		readErr := c.readErr
		c.mu.Unlock()
		if websocket.CloseStatus(readErr) == websocket.StatusPolicyViolation {
			closed++
		}
		cancel()
		writer.Wait()
		c.close()
	}
	flood := s.cpuTicks(t) - before
	// The budget refills at 1 MiB a second: a flood slowed by a loaded machine may decode one more
	// event for each 12 s it lasts. Unbounded, all 24 are decoded (14 s of CPU and more).
	refilled := int(time.Since(began) / (12 * time.Second))
	maxDecoded := 2 + refilled
	t.Logf("one 12 MiB response.create: %d ms of server CPU; %d of them on 3 connections of one principal: "+
		"%d decoded, %d refused rate_limit_exceeded, %d connections closed 1008, %d ms of server CPU (%.1f events' worth)",
		one*10, conns*perConn, decoded, limited, closed, flood*10, float64(flood)/float64(max(one, 1)))
	if decoded > maxDecoded || limited < conns || closed != conns {
		t.Errorf("%d decoded, %d refused, %d of %d connections closed 1008; want at most %d decoded (the principal's 16 MiB at once "+
			"and what refills while the flood runs), the rest refused and every connection closed", decoded, limited, closed, conns, maxDecoded)
	}
	// Before: every event decoded, ~24 events' worth. Now one, two with the refill, and the reads.
	if flood > (maxDecoded+2)*max(one, 5) {
		t.Errorf("the flood cost %d ms of server CPU, %.1f times one event's decode; want at most %d", flood*10, float64(flood)/float64(one), maxDecoded+2)
	}

	// Another principal is not held up.
	c = s.dialRealtime(t, s.jwt("faults-bytes-after-"+randHex(4), ""), true)
	c.until("session.created", nil)
	if errs, _, tr := turnAfter(t, c, "Hello after the flood."); len(errs) != 0 || tr == "" {
		t.Errorf("the text turn after: %d errors (%s), transcript %q", len(errs), firstRaw(errs), tr)
	}
	c.checkStrict()
	c.close()
	s.stop()
}
