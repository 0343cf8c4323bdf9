package tests

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/jackc/pgx/v5"

	"github.com/voiced/voiced/audio"
)

// audioSeconds is the seconds of 24 kHz PCM16 reply audio an event carries (0 for other events).
func audioSeconds(ev rtEvent) float64 {
	if ev.Type != "response.audio.delta" && ev.Type != "response.output_audio.delta" {
		return 0
	}
	b, _ := base64.StdEncoding.DecodeString(ev.str("delta"))
	return float64(len(b)/2) / 24000
}

// TestFaultsKill9UnderLoad: several metered conversations run at once: real speech streamed at
// the speaker's pace, then a long spoken reply each; the process is SIGKILLed while the replies
// stream. After a restart on the same meter store, /v1/usage summed over the principals is
// within one second of what was served: the speech the server hears of what was sent (measured
// on the restarted server) plus the reply audio the clients received up to the kill; and each
// conversation's spoken seconds are at least what its client received (deltas are durable
// before they are written).
func TestFaultsKill9UnderLoad(t *testing.T) {
	checkLeaks(t)
	kill9UnderLoad(t, nil)
}

// TestFaultsKill9UnderLoadPostgres is TestFaultsKill9UnderLoad on the Postgres meter store (one
// write per reply delta and per append, each a transaction over TCP).
func TestFaultsKill9UnderLoadPostgres(t *testing.T) {
	checkLeaks(t)
	dsn := os.Getenv("VOICED_TEST_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("VOICED_TEST_POSTGRES_DSN is unset: PostgreSQL (Debian package postgresql, scripts/install-deps.sh --test) started by scripts/test-services.sh")
	}
	kill9UnderLoad(t, []string{"--meter-dsn", dsn})
}

// kill9UnderLoad runs the kill test on a server started with args (and restarted with them).
func kill9UnderLoad(t *testing.T, args []string) {
	const conversations = 3
	s := startRealtime(t, serverOpts{Args: args})
	speech := sileroSpeech(t, "samples.pcm")
	users := make([]string, conversations)
	conns := make([]*rtConn, conversations)
	for i := range conns {
		users[i] = "kill-" + randHex(4)
		conns[i] = s.dialRealtime(t, s.mintBeta(t, s.jwt(users[i], "")), true)
		conns[i].until("session.created", nil)
		conns[i].send(betaSessionUpdate(nil))
		conns[i].until("session.updated", nil)
	}
	// Every speaker talks at once, at real time (pacing, not synchronisation).
	for at := 0; at < len(speech); at += 2400 {
		for _, c := range conns {
			c.appendAudio(speech[at:min(at+2400, len(speech))])
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, c := range conns {
		c.send(textItem(longText(40)))
		c.send(map[string]any{"type": "response.create"})
	}
	// Kill once every reply is streaming (each client has heard a second of it), none finished.
	received := make([]float64, conversations)
	done := make([]bool, conversations)
	deadline := time.Now().Add(60 * time.Second)
	for streaming := 0; streaming < conversations; {
		if time.Now().After(deadline) {
			t.Fatalf("the replies did not all start streaming in 60 s: received %v", received)
		}
		streaming = 0
		for i, c := range conns {
			select {
			case ev := <-c.events:
				received[i] += audioSeconds(ev)
				if ev.Type == "error" {
					t.Fatalf("conversation %d: %s", i, ev.Raw)
				}
				done[i] = done[i] || ev.Type == "response.done"
			case <-time.After(time.Millisecond):
			}
			if received[i] >= 1 {
				streaming++
			}
		}
	}
	s.kill9()
	for i, c := range conns { // what reached the client before the socket died is served too
		for ev := range c.events {
			received[i] += audioSeconds(ev)
			done[i] = done[i] || ev.Type == "response.done"
		}
	}
	for i := range done {
		if done[i] {
			t.Logf("conversation %d's reply finished before the kill (a longer reply would test more)", i)
		}
	}

	s2 := startRealtime(t, serverOpts{DataDir: s.DataDir, Args: args})
	// What the server hears of this speech, on the restarted server (another principal).
	ref := s2.dialRealtime(t, s2.mintBeta(t, s2.jwt("ref-"+randHex(4), "")), true)
	ref.until("session.created", nil)
	ref.send(betaSessionUpdate(nil))
	ref.until("session.updated", nil)
	for at := 0; at < len(speech); at += 2400 {
		ref.appendAudio(speech[at:min(at+2400, len(speech))])
	}
	ref.send(map[string]any{"type": "input_audio_buffer.commit"})
	ref.until("conversation.item.created", nil)
	ref.send(map[string]any{"type": "response.create"})
	evs := ref.until("response.done", nil)
	refHeard, _ := responseUsage(evs[len(evs)-1])
	ref.close()
	if refHeard <= 1 {
		t.Fatalf("the server reports hearing %.2f s of %.2f s of real speech", refHeard, float64(len(speech))/24000)
	}

	var served, metered float64
	for i, u := range users {
		heard, spoken := s2.usageOf(t, u)
		t.Logf("conversation %d: heard %.3f s metered / %.3f s served; spoken %.3f s metered / %.3f s received",
			i, heard, refHeard, spoken, received[i])
		served += refHeard + received[i]
		metered += heard + spoken
		// A delta is durable before it is written (issue 26): what a client got is all billed.
		if spoken < received[i]-1e-3 {
			t.Errorf("conversation %d: spoken %.3f s metered, less than the %.3f s it received", i, spoken, received[i])
		}
	}
	t.Logf("all %d conversations: %.3f s metered after kill -9 and restart, %.3f s served (difference %+.3f s)",
		conversations, metered, served, metered-served)
	if math.Abs(metered-served) > 1 {
		t.Errorf("usage after kill -9: %.3f s, served %.3f s: off by %.3f s, want within 1 s", metered, served, metered-served)
	}
	s2.stop()
}

// TestFaultsKill9RawDoors: a /v1/transcribe stream (real speech, 100 ms frames at 4× real time)
// and a /v1/speak/stream (one short sentence per piece, read as fast as it comes) run while the
// process is SIGKILLed. After a restart on the same meter store, the service principal's usage is
// within one chunk of what was served: spoken = the audio the client received ± the largest
// frame (one piece); heard ≤ the audio sent and ≥ it less the frame in flight and what the
// kernel still held (two frames at this pace).
func TestFaultsKill9RawDoors(t *testing.T) {
	checkLeaks(t)
	kill9RawDoors(t, nil)
}

// TestFaultsKill9RawDoorsPostgres is TestFaultsKill9RawDoors on the Postgres meter store. The raw
// doors meter under the one principal "service", which other tests on this database share, so the
// server gets a schema of its own (search_path in its DSN), dropped at the end.
func TestFaultsKill9RawDoorsPostgres(t *testing.T) {
	checkLeaks(t)
	dsn := os.Getenv("VOICED_TEST_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("VOICED_TEST_POSTGRES_DSN is unset: PostgreSQL (Debian package postgresql, scripts/install-deps.sh --test) started by scripts/test-services.sh")
	}
	kill9RawDoors(t, []string{"--meter-dsn", privateSchema(t, dsn)})
}

// privateSchema creates a schema on dsn's database for this test alone and returns dsn with its
// search_path set to it; the schema is dropped when the test ends.
func privateSchema(t *testing.T, dsn string) string {
	t.Helper()
	ctx := ctxT(t, 10*time.Second)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("postgres: %v", err)
	}
	defer conn.Close(context.Background())
	schema := "kill_" + randHex(6)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if c, err := pgx.Connect(ctx, dsn); err == nil {
			c.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
			c.Close(ctx)
		}
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("dsn: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func kill9RawDoors(t *testing.T, args []string) {
	s := startServer(t, serverOpts{Args: args})
	speech := audio.Float32ToPCM16(audio.Resample(audio.Int16ToFloat32(sileroSpeech(t, "samples.pcm")), 24000, 16000))
	const frameBytes = 3200 // 100 ms of 16 kHz PCM16

	hear := s.dialWS(t, "/v1/transcribe")
	if m := readJSON(t, hear, 30*time.Second); m["type"] != "ready" {
		t.Fatalf("transcribe: first frame %v, want ready", m)
	}
	speak := s.dialWS(t, "/v1/speak/stream")
	for _, want := range []string{"ready", "format"} {
		if m := readJSON(t, speak, 30*time.Second); m["type"] != want {
			t.Fatalf("speak: frame %v, want %s", m, want)
		}
	}
	writeJSON := func(conn *websocket.Conn, v any) error {
		b, _ := json.Marshal(v)
		return conn.Write(ctxT(t, 10*time.Second), websocket.MessageText, b)
	}
	if err := writeJSON(speak, map[string]any{"type": "start", "split_chars": 1}); err != nil {
		t.Fatal(err)
	}

	var (
		mu             sync.Mutex
		sent, received float64 // seconds the transcribe client wrote; the speak client read
		largest        float64 // the largest speak frame read
		readErr        error
		wg             sync.WaitGroup
		stopped        = make(chan struct{})
	)
	wg.Go(func() { // the microphone: 100 ms frames every 25 ms, the speech over and over
		for at := 0; ; at = (at + frameBytes) % (len(speech) - frameBytes) {
			select {
			case <-stopped:
				return
			case <-time.After(25 * time.Millisecond):
			}
			if err := hear.Write(context.Background(), websocket.MessageBinary, speech[at:at+frameBytes]); err != nil {
				return // the server is gone
			}
			mu.Lock()
			sent += 0.1
			mu.Unlock()
		}
	})
	// The speaker's text in one frame: 2000 short sentences, each its own piece. The server reads
	// it whole (its queue of pieces fills, not the socket), so at the kill nothing of the client's
	// is unread there: the kernel then delivers every frame voiced wrote (an unread byte would make
	// the close a reset, dropping what was written and not yet read).
	var text strings.Builder
	for i := 1; i <= 2000; i++ {
		fmt.Fprintf(&text, "Number %d is here. ", i)
	}
	if err := writeJSON(speak, map[string]any{"type": "text", "text": text.String()}); err != nil {
		t.Fatal(err)
	}
	wg.Go(func() { // the listener reads every frame as it comes
		for {
			typ, data, err := speak.Read(context.Background())
			if err != nil {
				return
			}
			if typ == websocket.MessageBinary {
				sec := float64(len(data)/2) / 24000
				mu.Lock()
				received += sec
				largest = max(largest, sec)
				mu.Unlock()
				continue
			}
			var m map[string]any
			if json.Unmarshal(data, &m) == nil && m["type"] == "error" {
				mu.Lock()
				readErr = fmt.Errorf("speak error frame: %s", data)
				mu.Unlock()
			}
		}
	})
	// Kill once both streams are well under way.
	deadline := time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		under := sent >= 3 && received >= 5
		mu.Unlock()
		if under {
			break
		}
		if time.Now().After(deadline) {
			close(stopped)
			hear.CloseNow()
			speak.CloseNow()
			wg.Wait()
			t.Fatalf("the raw doors did not get under way in 60 s: sent %.1f s, received %.1f s", sent, received)
		}
		time.Sleep(20 * time.Millisecond) // polling the clients' counters, not synchronising
	}
	// Freeze the server, then kill it: a frozen process reads nothing more, so what the kernel
	// still holds of the microphone's frames (unread by the server, or unsent by the client) is
	// audio never served. Measured, not assumed: on a loaded box the door lags the 4× pace.
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	sentAtStop := sent
	mu.Unlock()
	backlog := float64((tcpQueued(t, s.Addr)+frameBytes+7)/(frameBytes+8)) * 0.1 // a masked frame: 8 header bytes
	s.kill9()
	close(stopped)
	wg.Wait() // every client sees the socket die: what it got before is served
	if readErr != nil {
		t.Fatal(readErr)
	}

	s2 := startServer(t, serverOpts{DataDir: s.DataDir, Args: args})
	heard, spoken := s2.usageOf(t, "service")
	t.Logf("transcribe: %.3f s metered after kill -9 and restart, %.3f s sent (%.3f s when frozen, %.1f s of it still in the kernel); speak: %.3f s metered, %.3f s received (largest frame %.3f s)",
		heard, sent, sentAtStop, backlog, spoken, received, largest)
	if low := sentAtStop - backlog - 0.2; heard > sent+1e-3 || heard < low-1e-3 {
		t.Errorf("transcribe after kill -9: %.3f s metered, %.3f s sent, %.3f s read by the server: want within [read − 0.2 s, sent] = [%.3f, %.3f]",
			heard, sent, sentAtStop-backlog, low, sent)
	}
	if math.Abs(spoken-received) > largest+1e-3 {
		t.Errorf("speak after kill -9: %.3f s metered, %.3f s received: off by %+.3f s, want within one frame (%.3f s)",
			spoken, received, spoken-received, largest)
	}
	s2.stop()
}

// tcpQueued is what the kernel holds between the clients and the server at addr (IPv4
// host:port): the receive queues of the server's connections plus the send queues of the
// connections to it (Linux /proc/net/tcp; 0 elsewhere).
func tcpQueued(t *testing.T, addr string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Logf("no /proc/net/tcp (%v): counting nothing in the kernel", err)
		return 0
	}
	_, portStr, _ := strings.Cut(addr, ":")
	port, err := strconv.Atoi(portStr)
	if err != nil {
		t.Fatalf("server address %q: %v", addr, err)
	}
	suffix := fmt.Sprintf(":%04X", port)
	total := 0
	for _, line := range strings.Split(string(b), "\n")[1:] {
		// sl local_address rem_address st tx_queue:rx_queue ...
		f := strings.Fields(line)
		if len(f) < 5 || f[3] != "01" { // ESTABLISHED only
			continue
		}
		txs, rxs, _ := strings.Cut(f[4], ":")
		tx, err1 := strconv.ParseInt(txs, 16, 64)
		rx, err2 := strconv.ParseInt(rxs, 16, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		if strings.HasSuffix(f[1], suffix) { // the server's end
			total += int(rx)
		}
		if strings.HasSuffix(f[2], suffix) { // a client's end
			total += int(tx)
		}
	}
	return total
}
