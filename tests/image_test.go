//go:build image

package tests

// The container image, booted and checked from outside (make image-test; issue 24). Built only
// with -tags image: make image-test builds the image first (scripts/image.sh) and exports
// VOICED_IMAGE, VOICED_IMAGE_ENGINE and VOICED_IMAGE_RUN_ARGS (scripts/image.sh env).

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voiced/voiced/audio"
)

// imageEngine is the container engine command ("podman --runtime runc", "docker") and the flags
// every run takes (ulimits).
func imageEngine(t testing.TB) (image string, engine, runArgs []string) {
	t.Helper()
	image = os.Getenv("VOICED_IMAGE")
	engine = strings.Fields(os.Getenv("VOICED_IMAGE_ENGINE"))
	if image == "" || len(engine) == 0 {
		t.Fatal("VOICED_IMAGE and VOICED_IMAGE_ENGINE are not set: run `make image-test` (it builds the image and exports them)")
	}
	return image, engine, strings.Fields(os.Getenv("VOICED_IMAGE_RUN_ARGS"))
}

func engineCmd(t testing.TB, args ...string) (string, error) {
	t.Helper()
	_, engine, _ := imageEngine(t)
	out, err := exec.Command(engine[0], append(engine[1:], args...)...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func mustEngine(t testing.TB, args ...string) string {
	t.Helper()
	out, err := engineCmd(t, args...)
	if err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
	return out
}

// imageOpts is one container's setting: its data volume (a named volume, kept across containers),
// the shared service token, and extra serve flags.
type imageOpts struct {
	Volume string
	Token  string
	Args   []string
}

type container struct {
	*server
	name    string
	toReady time.Duration // from `run` to /health/ready 200
}

// imageVolume is a named volume of the engine, removed at cleanup.
func imageVolume(t testing.TB) string {
	t.Helper()
	name := "voiced-image-test-" + randHex(6)
	mustEngine(t, "volume", "create", name)
	t.Cleanup(func() { engineCmd(t, "volume", "rm", "-f", name) })
	return name
}

// startContainer runs the image in the foreground (its output is the server's log) on the host's
// loopback: --network host and VOICED_BIND=127.0.0.1:<free port>, the fixture mount read-only at
// /models, the volume at /data, the principal-JWT secret read-only at /run/secrets. Everything
// else is the image's own defaults (CMD serve, VOICED_SPEECH_ASSETS=/models, VOICED_DATA_DIR=/data,
// JSON logs). It waits for /health/ready 200 and records how long that took from the run.
func startContainer(t testing.TB, o imageOpts) *container {
	t.Helper()
	image, engine, runArgs := imageEngine(t)
	secrets := t.TempDir()
	if err := os.WriteFile(filepath.Join(secrets, "jwt.secret"), secretOnce, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(secrets, 0o755); err != nil { // read by uid 10001 inside
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	if o.Token == "" {
		o.Token = "image-token-" + randHex(8)
	}
	c := &container{name: "voiced-image-test-" + randHex(6)}
	s := &server{t: t, Token: o.Token, Secret: secretOnce, exited: make(chan struct{}), logs: newLogSink()}
	c.server = s
	args := append([]string{"run", "--rm", "--name", c.name, "--network", "host"}, runArgs...)
	args = append(args,
		"-v", fixtureDir+":/models:ro",
		"-v", o.Volume+":/data",
		"-v", secrets+":/run/secrets:ro",
		"-e", fmt.Sprintf("VOICED_BIND=127.0.0.1:%d", port),
		"-e", "VOICED_TOKEN="+o.Token,
		"-e", "VOICED_JWT_SECRET_FILE=/run/secrets/jwt.secret",
		"-e", "VOICED_SHUTDOWN_GRACE=5s",
		image)
	if len(o.Args) > 0 {
		args = append(append(args, "serve"), o.Args...)
	}
	s.cmd = exec.Command(engine[0], append(engine[1:], args...)...)
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
	start := time.Now()
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.waitErr = s.cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() {
		engineCmd(t, "rm", "-f", c.name)
		s.ensureGone()
	})
	select {
	case s.Addr = <-s.logs.listening:
	case <-s.exited:
		t.Fatalf("the container exited before listening (%v):\n%s", s.waitErr, s.logs)
	case <-time.After(120 * time.Second):
		t.Fatalf("the container did not log 'listening' in 120 s:\n%s", s.logs)
	}
	s.Base, s.WSBase = "http://"+s.Addr, "ws://"+s.Addr
	tr := &http.Transport{}
	s.Client = &http.Client{Transport: tr, Timeout: 60 * time.Second}
	t.Cleanup(tr.CloseIdleConnections)
	deadline := time.Now().Add(120 * time.Second)
	for {
		st, name := s.probe("/health/ready")
		if st == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/health/ready never 200 (last %d %s):\n%s", st, name, s.logs)
		}
		time.Sleep(50 * time.Millisecond) // polling the probe, as a load balancer does
	}
	c.toReady = time.Since(start)
	return c
}

// pid is the container's main process as the host sees it.
func (c *container) pid(t testing.TB) int {
	t.Helper()
	var pid int
	fmt.Sscan(mustEngine(t, "inspect", "-f", "{{.State.Pid}}", c.name), &pid)
	if pid <= 0 {
		t.Fatalf("container %s has no pid", c.name)
	}
	return pid
}

// signal sends sig through the engine (what an orchestrator does) and waits for the container to
// end; it returns the exit code the engine reports.
func (c *container) signal(t testing.TB, sig string) {
	t.Helper()
	mustEngine(t, "kill", "--signal", sig, c.name)
}

func (c *container) waitExit(t testing.TB) error {
	t.Helper()
	select {
	case <-c.exited:
	case <-time.After(60 * time.Second):
		t.Fatalf("the container did not exit 60 s after the signal:\n%s", c.logs)
	}
	return c.waitErr
}

// TestImage: one container of the image, checked from outside: ready once warm, a text turn and a
// spoken turn answered (the reply audio reads back as its transcript through the fixture codec),
// uid 10001, /models read-only, the meter kept on the volume across `kill` + a new container,
// SIGTERM drains (ready 503 shutting_down during the drain delay, then exit 0).
func TestImage(t *testing.T) {
	image, engine, _ := imageEngine(t)
	vol := imageVolume(t)
	c := startContainer(t, imageOpts{Volume: vol})
	size := mustEngine(t, "image", "inspect", "-f", "{{.Size}}", image)
	var sizeBytes int64
	fmt.Sscan(size, &sizeBytes)
	t.Logf("image %s (%s): %.0f MB; from `run` to /health/ready 200: %v", image, strings.Join(engine, " "), float64(sizeBytes)/1e6, c.toReady.Round(10*time.Millisecond))
	fmt.Printf("IMAGE %s: size %.0f MB, run to ready %.2f s\n", image, float64(sizeBytes)/1e6, c.toReady.Seconds())

	t.Run("runs as uid 10001", func(t *testing.T) {
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.pid(t)))
		if err != nil {
			t.Fatal(err)
		}
		var name, uid string
		for _, line := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "Name:"); ok {
				name = strings.TrimSpace(v)
			}
			if v, ok := strings.CutPrefix(line, "Uid:"); ok {
				uid = strings.Join(strings.Fields(v), " ")
			}
		}
		if name != "voiced" || uid != "10001 10001 10001 10001" {
			t.Errorf("the container's process: %q with uids %q, want voiced as 10001 (real, effective, saved, fs)", name, uid)
		}
	})

	t.Run("models read-only", func(t *testing.T) {
		out, err := engineCmd(t, "exec", c.name, "touch", "/models/written-by-voiced")
		if err == nil || !strings.Contains(out, "Read-only file system") {
			t.Errorf("writing /models inside the container: %v %q, want Read-only file system", err, out)
		}
		if _, err := os.Stat(filepath.Join(fixtureDir, "written-by-voiced")); err == nil {
			t.Error("a file written in the container appeared in the mount")
		}
	})

	user := "image-" + randHex(4)
	var spokenBefore float64
	t.Run("text and spoken turns", func(t *testing.T) {
		rc := c.dialRealtime(t, c.mintBeta(t, c.jwt(user, "acme")), true)
		rc.until("session.created", nil)
		rc.send(betaSessionUpdate(nil))
		rc.until("session.updated", nil)
		evs, received := textTurn(t, rc, "Hello from the image.")
		if tr := replyTranscript(evs); !strings.Contains(tr, "Hello from the image") || received == 0 {
			t.Errorf("text turn: transcript %q, %.2f s of audio; want the echo, spoken", tr, received)
		}

		rc.send(betaSessionUpdate(serverVAD()))
		rc.until("session.updated", nil)
		question := espeakSpeech(t, "What is the weather like today?")
		rc.appendAudio(append(append(silence24k(0.5), question...), silence24k(1.5)...))
		evs = rc.untilCompleted()
		transcript := replyTranscript(evs)
		if err := checkReplyAudio(t, c.server, transcript, replyAudio(t, evs)); err != nil {
			t.Errorf("spoken turn: %v", err)
		}
		rc.checkStrict()
		rc.close()
		_, spokenBefore = c.usageWhen(t, user, func(heard, spoken float64) bool { return heard > 0 && spoken > received })
		if spokenBefore <= received {
			t.Errorf("usage before the kill: spoken %.2f s, want more than the text turn's %.2f s", spokenBefore, received)
		}
	})

	t.Run("meter survives kill and a new container", func(t *testing.T) {
		c.signal(t, "KILL")
		if err := c.waitExit(t); err == nil {
			t.Errorf("killed container exited 0")
		}
		c2 := startContainer(t, imageOpts{Volume: vol})
		heard, spoken := c2.usageOf(t, user)
		if heard <= 0 || spoken < spokenBefore-1e-6 {
			t.Errorf("usage after kill + new container on the volume: heard %.2f spoken %.2f, want spoken %.2f kept", heard, spoken, spokenBefore)
		}
		c2.stop()
	})

	t.Run("SIGTERM drains", func(t *testing.T) {
		d := startContainer(t, imageOpts{Volume: vol, Args: []string{"--drain-delay", "2s"}})
		d.signal(t, "TERM")
		for {
			st, name := d.probe("/health/ready")
			if st == http.StatusOK {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			if st != http.StatusServiceUnavailable || name != "shutting_down" {
				t.Errorf("ready during the drain: %d %q, want 503 shutting_down", st, name)
			}
			break
		}
		if st, _ := d.probe("/health/live"); st != http.StatusOK {
			t.Errorf("live during the drain: %d, want 200", st)
		}
		if err := d.waitExit(t); err != nil {
			t.Errorf("exit after SIGTERM: %v, want 0:\n%s", err, d.logs)
		}
	})
}

// TestImageCluster: two containers of the image on one Redis and one Postgres (the host's, from
// scripts/test-services.sh) with --cluster-store: a half-duplex transcript opened on one, pushed to
// both and closed on the other reads the same text as on one node alone.
func TestImageCluster(t *testing.T) {
	redisURL, dsn := os.Getenv("VOICED_TEST_REDIS_URL"), os.Getenv("VOICED_TEST_POSTGRES_DSN")
	if redisURL == "" || dsn == "" {
		t.Fatal("VOICED_TEST_REDIS_URL and VOICED_TEST_POSTGRES_DSN are not set: make image-test starts them with scripts/test-services.sh (scripts/install-deps.sh --test installs them)")
	}
	token := "image-cluster-" + randHex(8)
	flags := []string{"--ticket-store", redisURL, "--cluster-store", redisURL, "--meter-dsn", dsn}
	a := startContainer(t, imageOpts{Volume: imageVolume(t), Token: token, Args: flags})
	b := startContainer(t, imageOpts{Volume: imageVolume(t), Token: token, Args: flags})

	speech24 := append(append(silence24k(0.3), espeakSpeech(t, "Please read back the numbers one two three.")...), silence24k(1.0)...)
	speech := audio.Float32ToInt16(audio.Resample(audio.Int16ToFloat32(speech24), 24000, 16000))
	one, _ := transcriptRun(t, a.server, []*server{a.server}, a.server, speech)
	if one == "" {
		t.Fatal("one node: empty transcript")
	}
	two, _ := transcriptRun(t, a.server, []*server{a.server, b.server}, b.server, speech)
	if two != one {
		t.Errorf("opened on A, pushed to A and B, closed on B: %q; on A alone: %q", two, one)
	}
	a.stop()
	b.stop()
}
