package tests

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/voiced/voiced/audio"
)

// ---- a raw WebSocket client: frames written by hand, so it can misbehave ----

type rawWS struct {
	t    testing.TB
	conn *net.TCPConn
	r    *bufio.Reader
}

// dialRaw opens /v1/realtime over a plain TCP connection (beta dialect) with the bearer and reads
// the 101. rcvbuf > 0 shrinks the socket's receive buffer before connecting (a slow reader's
// window fills soon).
func (s *server) dialRaw(t testing.TB, bearer string, rcvbuf int) *rawWS {
	t.Helper()
	d := net.Dialer{Timeout: 10 * time.Second}
	if rcvbuf > 0 {
		d.Control = func(_, _ string, rc syscall.RawConn) error {
			var serr error
			err := rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, rcvbuf) })
			if err != nil {
				return err
			}
			return serr
		}
	}
	c, err := d.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	conn := c.(*net.TCPConn)
	t.Cleanup(func() { conn.Close() })
	key := make([]byte, 16)
	_, _ = rand.Read(key)
	fmt.Fprintf(conn, "GET /v1/realtime?model=gpt-4o-realtime-preview HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: realtime\r\nOpenAI-Beta: realtime=v1\r\n"+
		"Authorization: Bearer %s\r\n\r\n", s.Addr, base64.StdEncoding.EncodeToString(key), bearer)
	r := bufio.NewReader(conn)
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatalf("raw handshake: %v", err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("raw handshake: %s, want 101", resp.Status)
	}
	_ = conn.SetReadDeadline(time.Time{})
	return &rawWS{t: t, conn: conn, r: r}
}

// frameHeader is a masked client frame's header for a payload of n bytes (FIN set).
func frameHeader(opcode byte, n int, mask [4]byte) []byte {
	h := []byte{0x80 | opcode}
	switch {
	case n < 126:
		h = append(h, 0x80|byte(n))
	case n <= 0xffff:
		h = append(h, 0x80|126, byte(n>>8), byte(n))
	default:
		h = append(h, 0x80|127)
		h = binary.BigEndian.AppendUint64(h, uint64(n))
	}
	return append(h, mask[:]...)
}

func masked(payload []byte, mask [4]byte) []byte {
	out := make([]byte, len(payload))
	for i, b := range payload {
		out[i] = b ^ mask[i%4]
	}
	return out
}

// sendJSON writes one whole text frame.
func (w *rawWS) sendJSON(v any) {
	w.t.Helper()
	b, _ := json.Marshal(v)
	mask := [4]byte{1, 2, 3, 4}
	_ = w.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := w.conn.Write(append(frameHeader(0x1, len(b), mask), masked(b, mask)...)); err != nil {
		w.t.Fatalf("raw send: %v", err)
	}
}

// readUntil reads the server's byte stream until it holds substr (frames are not parsed: every
// event is JSON text and the substrings looked for are event types).
func (w *rawWS) readUntil(substr string) {
	w.t.Helper()
	_ = w.conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	defer w.conn.SetReadDeadline(time.Time{})
	var seen []byte
	buf := make([]byte, 64<<10)
	for !strings.Contains(string(seen), substr) {
		n, err := w.r.Read(buf)
		if err != nil {
			w.t.Fatalf("raw read waiting for %q: %v", substr, err)
		}
		seen = append(seen, buf[:n]...)
		if len(seen) > 1<<20 {
			seen = seen[len(seen)-len(substr):]
		}
	}
}

// reset ends the connection with a TCP RST: no close frame, no FIN.
func (w *rawWS) reset() {
	_ = w.conn.SetLinger(0)
	_ = w.conn.Close()
}

// ---- slots and usage ----

func (s *server) voiceBusy(t testing.TB) int {
	t.Helper()
	code, body := s.do("GET", "/v1/voice/health", "", nil)
	var h struct {
		Busy *int `json:"busy"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &h) != nil || h.Busy == nil {
		t.Fatalf("GET /v1/voice/health: %d %s", code, body)
	}
	return *h.Busy
}

// waitSlotFree polls /v1/voice/health until busy is 0, failing after bound; it returns how long
// that took (reported, not asserted beyond the bound).
func (s *server) waitSlotFree(t testing.TB, bound time.Duration) time.Duration {
	t.Helper()
	return s.waitBusyAtMost(t, 0, bound)
}

// waitBusyAtMost polls /v1/voice/health until at most n conversations hold a slot, failing after
// bound: a conversation the client closed keeps its slot until the close reaches the server and
// its closed usage record is written, so a dial right after a close may be refused 429 under a cap.
func (s *server) waitBusyAtMost(t testing.TB, n int, bound time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for s.voiceBusy(t) > n {
		if time.Since(start) > bound {
			t.Fatalf("more than %d conversations still held a slot %s later\n%s", n, bound, s.logs)
		}
		time.Sleep(50 * time.Millisecond) // polling the server's state, not synchronising
	}
	return time.Since(start)
}

// admitted: with --max-conversations 1 a new conversation is admitted only once the slot is free.
// It waits for its own slot to come back, so whatever the caller dials next is not refused for a
// slot this check still holds (the server releases it after the close reaches it).
func (s *server) admitted(t testing.TB, sub string) {
	t.Helper()
	c := s.dialRealtime(t, s.jwt(sub, ""), true)
	c.until("session.created", nil)
	c.close()
	s.waitSlotFree(t, 15*time.Second)
}

// speechB64 is real speech (the squelch bills only speech as heard), as 100 ms appends.
func speechAppends(t testing.TB) []map[string]any {
	t.Helper()
	pcm := sileroSpeech(t, "samples.pcm")
	pcm = pcm[:min(len(pcm), 3*24000)]
	var out []map[string]any
	for len(pcm) > 0 {
		n := min(len(pcm), 2400)
		out = append(out, map[string]any{"type": "input_audio_buffer.append", "audio": base64.StdEncoding.EncodeToString(audio.Int16ToBytes(pcm[:n]))})
		pcm = pcm[n:]
	}
	return out
}

// heardReference is what a well-behaved client sending appends is metered as heard (the squelch
// decides how much of real speech is speech): the faulty clients must be metered the same.
func (s *server) heardReference(t testing.TB, appends []map[string]any) float64 {
	t.Helper()
	sub := "faults-ref-" + randHex(4)
	c := s.dialRealtime(t, s.jwt(sub, ""), true)
	c.until("session.created", nil)
	c.send(betaSessionUpdate(nil))
	c.until("session.updated", nil)
	for _, a := range appends {
		c.send(a)
	}
	c.close()
	s.waitSlotFree(t, 30*time.Second)
	var last float64
	heard, _ := s.usageWhen(t, sub, func(h, _ float64) bool {
		settled := h > 0 && h == last
		last = h
		return settled
	})
	if heard <= 0 {
		t.Fatalf("the reference conversation was metered %.3f s heard", heard)
	}
	return heard
}

func checkHeard(t testing.TB, what string, heard, want float64) {
	t.Helper()
	if heard < want-0.02 || heard > want+0.02 {
		t.Errorf("%s: heard %.3f s, want %.3f s (a well-behaved client sending the same audio)", what, heard, want)
	}
}

// TestFaultsClientVanishes: a client that vanishes mid-reply (TCP reset, no close frame) and one
// that opens and never sends each release their slot (--max-conversations 1: the next
// conversation is admitted) within a bounded time, and the audio they sent is metered.
func TestFaultsClientVanishes(t *testing.T) {
	checkLeaks(t)
	needFlag(t, "max-conversations", "idle-timeout")
	const idle = 2 * time.Second
	s := startRealtime(t, serverOpts{Args: []string{"--max-conversations", "1", "--idle-timeout", idle.String()}})
	bound := idle + 15*time.Second
	appends := speechAppends(t)
	want := s.heardReference(t, appends)

	t.Run("vanishes mid-reply", func(t *testing.T) {
		sub := "faults-reset-" + randHex(4)
		w := s.dialRaw(t, s.jwt(sub, ""), 0)
		w.readUntil("session.created")
		w.sendJSON(betaSessionUpdate(nil))
		w.readUntil("session.updated")
		for _, a := range appends {
			w.sendJSON(a)
		}
		w.sendJSON(textItem(longText(20)))
		w.sendJSON(map[string]any{"type": "response.create"})
		w.readUntil("response.audio.delta")
		w.reset()
		t.Logf("slot free %s after the reset", s.waitSlotFree(t, bound))
		s.admitted(t, sub+"-next")
		heard, spoken := s.usageWhen(t, sub, func(h, sp float64) bool { return h >= want-0.02 && sp > 0 })
		checkHeard(t, "reset mid-reply", heard, want)
		if spoken <= 0 {
			t.Errorf("usage after a reset mid-reply: spoken %.3f s, want > 0 (audio was sent)", spoken)
		}
	})

	t.Run("opens and never sends", func(t *testing.T) {
		sub := "faults-mute-" + randHex(4)
		w := s.dialRaw(t, s.jwt(sub, ""), 0)
		w.readUntil("session.created")
		t.Logf("slot free %s after opening (--idle-timeout %s)", s.waitSlotFree(t, bound), idle)
		s.admitted(t, sub+"-next")
	})
	s.stop()
}

// TestFaultsClientHalfFrame: a client that sends half a frame and stalls is closed when idle; the
// slot comes back and the whole frames before it are metered.
func TestFaultsClientHalfFrame(t *testing.T) {
	checkLeaks(t)
	needFlag(t, "max-conversations", "idle-timeout")
	const idle = 2 * time.Second
	s := startRealtime(t, serverOpts{Args: []string{"--max-conversations", "1", "--idle-timeout", idle.String()}})
	appends := speechAppends(t)
	want := s.heardReference(t, appends)
	sub := "faults-half-" + randHex(4)
	w := s.dialRaw(t, s.jwt(sub, ""), 0)
	w.readUntil("session.created")
	w.sendJSON(betaSessionUpdate(nil))
	w.readUntil("session.updated")
	for _, a := range appends {
		w.sendJSON(a)
	}
	b, _ := json.Marshal(appends[0])
	mask := [4]byte{9, 8, 7, 6}
	if _, err := w.conn.Write(append(frameHeader(0x1, len(b), mask), masked(b[:len(b)/2], mask)...)); err != nil {
		t.Fatal(err)
	}
	t.Logf("slot free %s after the half frame", s.waitSlotFree(t, idle+15*time.Second))
	s.admitted(t, sub+"-next")
	heard, _ := s.usageWhen(t, sub, func(h, _ float64) bool { return h >= want-0.02 })
	checkHeard(t, "half a frame", heard, want)
	s.stop()
}

// TestFaultsClientStopsReading: a client that asks for a long reply and stops reading (its
// receive window full) has its conversation ended — the slot comes back — and what it was spoken
// and heard before is metered.
func TestFaultsClientStopsReading(t *testing.T) {
	checkLeaks(t)
	needFlag(t, "max-conversations")
	s := startRealtime(t, serverOpts{Args: []string{"--max-conversations", "1"}})
	appends := speechAppends(t)
	want := s.heardReference(t, appends)
	sub := "faults-slow-" + randHex(4)
	w := s.dialRaw(t, s.jwt(sub, ""), 4096)
	w.readUntil("session.created")
	w.sendJSON(betaSessionUpdate(nil))
	w.readUntil("session.updated")
	for _, a := range appends {
		w.sendJSON(a)
	}
	w.sendJSON(textItem(longText(200)))
	w.sendJSON(map[string]any{"type": "response.create"})
	w.readUntil("response.audio.delta")
	// From here the client reads nothing; the server's queue and the socket fill.
	t.Logf("slot free %s after the client stopped reading", s.waitSlotFree(t, 60*time.Second))
	s.admitted(t, sub+"-next")
	heard, spoken := s.usageWhen(t, sub, func(h, sp float64) bool { return h >= want-0.02 && sp > 0 })
	checkHeard(t, "stopped reading", heard, want)
	if spoken <= 0 {
		t.Errorf("usage after the client stopped reading: spoken %.3f s, want > 0", spoken)
	}
	w.reset()
	s.stop()
}
