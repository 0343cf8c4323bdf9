package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/voiced/voiced/audio"
)

// probe answers GET path with its status and error name ("" on 200).
func (s *server) probe(path string) (int, string) {
	status, body := s.do("GET", path, "", nil)
	var f struct {
		Name string `json:"name"`
	}
	json.Unmarshal(body, &f)
	return status, f.Name
}

// privateRedis starts a redis-server of this test's own on a free loopback port (the shared one
// is other tests'); stop kills it, start brings it back on the same port.
type privateRedis struct {
	t    testing.TB
	port int
	cmd  *exec.Cmd
}

func startPrivateRedis(t testing.TB) *privateRedis {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not installed (scripts/install-deps.sh --test installs it)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &privateRedis{t: t, port: ln.Addr().(*net.TCPAddr).Port}
	ln.Close()
	r.start()
	t.Cleanup(r.stop)
	return r
}

func (r *privateRedis) url() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", r.port) }

func (r *privateRedis) start() {
	r.t.Helper()
	r.cmd = exec.Command("redis-server", "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	if err := r.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", r.port)); err == nil {
			c.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.t.Fatalf("redis-server on port %d did not answer", r.port)
}

func (r *privateRedis) stop() {
	if r.cmd == nil {
		return
	}
	r.cmd.Process.Kill()
	r.cmd.Wait()
	r.cmd = nil
}

// TestReadyProbe: /health/live answers while the process serves; /health/ready is 503 by name
// without a mount, 200 when warm with its stores answering, 503 ticket_store_unavailable while
// the ticket store is away (200 again when it is back), and 503 shutting_down from SIGTERM on,
// while the listener stays open for --drain-delay.
func TestReadyProbe(t *testing.T) {
	checkLeaks(t)
	needFlag(t, "drain-delay", "ticket-store")

	bare := startServer(t, serverOpts{NoMount: true})
	if st, _ := bare.probe("/health/live"); st != 200 {
		t.Errorf("live without a mount: %d, want 200", st)
	}
	if st, name := bare.probe("/health/ready"); st != 503 || name != "speech_assets_not_mounted" {
		t.Errorf("ready without a mount: %d %q, want 503 speech_assets_not_mounted", st, name)
	}
	bare.stop()

	rd := startPrivateRedis(t)
	s := startServer(t, serverOpts{Args: []string{"--ticket-store", rd.url(), "--drain-delay", "2s"}})
	if st, name := s.probe("/health/ready"); st != 200 {
		t.Fatalf("ready when warm: %d %q, want 200", st, name)
	}
	rd.stop()
	if st, name := s.probe("/health/ready"); st != 503 || name != "ticket_store_unavailable" {
		t.Errorf("ready with the ticket store away: %d %q, want 503 ticket_store_unavailable", st, name)
	}
	rd.start()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, name := s.probe("/health/ready")
		if st == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ready after the ticket store came back: %d %q, want 200", st, name)
		}
		time.Sleep(100 * time.Millisecond)
	}

	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// The signal is handled asynchronously: the first answer that is not 200 must be the drain's,
	// and it must come while the listener is still open (--drain-delay 2s).
	for {
		st, name := s.probe("/health/ready")
		if st == 200 {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		if st != 503 || name != "shutting_down" {
			t.Errorf("ready during the drain: %d %q, want 503 shutting_down", st, name)
		}
		break
	}
	if st, _ := s.probe("/health/live"); st != 200 {
		t.Errorf("live during the drain: %d, want 200 (the process still serves)", st)
	}
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("voiced did not exit after SIGTERM:\n%s", s.logs)
	}
	if s.waitErr != nil {
		t.Fatalf("exit after SIGTERM: %v, want 0", s.waitErr)
	}
}

// transcriptRun opens a half-duplex transcript on open, pushes pcm (16 kHz) in 250 ms chunks to
// the nodes in turn from pushTo, closes it on closeOn, and returns the final text and the seconds
// the pushes were billed.
func transcriptRun(t *testing.T, open *server, pushTo []*server, closeOn *server, pcm []int16) (string, float64) {
	t.Helper()
	st, body := open.do("POST", "/v1/audio/transcript", "", nil)
	if st != http.StatusCreated {
		t.Fatalf("open: %d %s", st, body)
	}
	var opened struct{ ID string }
	json.Unmarshal(body, &opened)
	billed := 0.0
	for i, n := 0, 0; n < len(pcm); i++ {
		end := min(n+4000, len(pcm))
		node := pushTo[i%len(pushTo)]
		st, body := node.do("POST", "/v1/audio/transcript/"+opened.ID, "application/octet-stream", bytes.NewReader(audio.Int16ToBytes(pcm[n:end])))
		if st != 200 {
			t.Fatalf("push %d to %s: %d %s", i, node.Addr, st, body)
		}
		var ack struct{ Duration float64 }
		json.Unmarshal(body, &ack)
		billed += ack.Duration
		n = end
	}
	st, body = closeOn.do("DELETE", "/v1/audio/transcript/"+opened.ID, "", nil)
	if st != 200 {
		t.Fatalf("close on %s: %d %s", closeOn.Addr, st, body)
	}
	var done struct{ Text string }
	json.Unmarshal(body, &done)
	return done.Text, billed
}

// TestTranscriptAnyNode: two nodes on one Redis and one Postgres; a transcript opened on A is
// pushed to on A and B alternately and closed on B with the same text and billed seconds as on A
// alone; once A is killed, B answers transcript_not_found for A's transcript and B's own work.
func TestTranscriptAnyNode(t *testing.T) {
	checkLeaks(t)
	needFlag(t, "cluster-store", "ticket-store")
	dsn := os.Getenv("VOICED_TEST_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("VOICED_TEST_POSTGRES_DSN is not set (make test sets it via scripts/test-services.sh when the Debian package postgresql is installed: scripts/install-deps.sh --test)")
	}
	rd := startPrivateRedis(t)
	// Every node shares the service token: a forwarded request carries the client's.
	shared := serverOpts{Token: "e2e-cluster-" + randHex(8), Args: []string{"--ticket-store", rd.url(), "--meter-dsn", dsn}}
	a := startServer(t, shared)
	b := startServer(t, shared)

	speech24 := append(append(silence24k(0.3), espeakSpeech(t, "Please read back the numbers one two three.")...), silence24k(1.0)...)
	speech := audio.Float32ToInt16(audio.Resample(audio.Int16ToFloat32(speech24), 24000, 16000))

	oneText, oneBilled := transcriptRun(t, a, []*server{a}, a, speech)
	if oneText == "" || oneBilled <= 0 {
		t.Fatalf("one node: text %q billed %.3f s; want some of each", oneText, oneBilled)
	}
	twoText, twoBilled := transcriptRun(t, a, []*server{a, b}, b, speech)
	if twoText != oneText || math.Abs(twoBilled-oneBilled) > 1e-9 {
		t.Errorf("opened on A, pushed to A and B, closed on B: %q, %.3f s; on A alone: %q, %.3f s", twoText, twoBilled, oneText, oneBilled)
	}

	st, body := a.do("POST", "/v1/audio/transcript", "", nil)
	if st != http.StatusCreated {
		t.Fatalf("open on A: %d %s", st, body)
	}
	var onA struct{ ID string }
	json.Unmarshal(body, &onA)
	a.kill9()
	st, body = b.do("POST", "/v1/audio/transcript/"+onA.ID, "application/octet-stream", bytes.NewReader(make([]byte, 3200)))
	var f struct{ Name string }
	json.Unmarshal(body, &f)
	if st != http.StatusNotFound || f.Name != "transcript_not_found" {
		t.Errorf("push on B to a transcript of the dead A: %d %s, want 404 transcript_not_found", st, body)
	}
	if text, _ := transcriptRun(t, b, []*server{b}, b, speech); text != oneText {
		t.Errorf("B's own transcript after A died: %q, want %q", text, oneText)
	}
	b.stop()
}
