package tests

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// TestSoakShort is `make soak` shortened to fit the test suite: voiced-bench soak drives three
// reconnecting conversations and the raw doors for 25 s against the built binary and must pass:
// its series flat after warm-up, goroutines and open files back to where they were once the
// clients are gone (a goroutine leaked per conversation fails here), no error event, and the
// meter's spoken seconds equal to the reply audio the clients received.
func TestSoakShort(t *testing.T) {
	if testing.Short() {
		t.Skip("the soak takes about 45 s")
	}
	checkLeaks(t)
	dir := t.TempDir()
	bench := filepath.Join(dir, "voiced-bench")
	if out, err := exec.Command("go", "build", "-o", bench, "../cmd/voiced-bench").CombinedOutput(); err != nil {
		t.Fatalf("build voiced-bench: %v\n%s", err, out)
	}
	s := startServer(t, serverOpts{Args: []string{"--max-conversations", "8", "--max-per-tenant", "8"}})
	secret := filepath.Join(dir, "jwt.secret")
	token := filepath.Join(dir, "token")
	os.WriteFile(secret, s.Secret, 0o600)
	os.WriteFile(token, []byte(s.Token), 0o600)
	report := filepath.Join(dir, "soak.json")
	cmd := exec.Command(bench, "soak", "-url", s.Base, "-token-file", token, "-jwt-secret-file", secret,
		"-pid", strconv.Itoa(s.cmd.Process.Pid), "-conversations", "3", "-duration", "25s", "-sample", "1s",
		"-warmup", "5s", "-json", report, "-png", filepath.Join(dir, "soak.png"))
	cmd.Env = os.Environ()
	out, err := cmd.CombinedOutput()
	var rep struct {
		Verdict string
		Turns   int
		Failed  []string
		Meter   map[string]float64
	}
	b, _ := os.ReadFile(report)
	json.Unmarshal(b, &rep)
	if err != nil || rep.Verdict != "PASS" {
		t.Fatalf("soak: %v, verdict %q, failed %v\n%s", err, rep.Verdict, rep.Failed, out)
	}
	if rep.Turns < 3 || rep.Meter["spokenReceived"] <= 0 {
		t.Fatalf("the soak proved little: %d turns, %v", rep.Turns, rep.Meter)
	}
	t.Logf("soak: %d turns; meter %v", rep.Turns, rep.Meter)
	s.stop()
}
