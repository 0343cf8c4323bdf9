package tests

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/voiced/voiced/internal/testkit"
)

// What TestMain prepares once per test binary run.
var (
	voicedBin  string          // $VOICED_BIN
	fixtureDir string          // `voiced assets fixture` output, shared read-only by every server
	serveFlags map[string]bool // the flags `voiced serve -h` lists (components register their own)
	testCA     *certAuthority  // signs the servers' TLS certificates; ca.pem is for Node
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	voicedBin = os.Getenv("VOICED_BIN")
	if voicedBin == "" {
		fmt.Fprintln(os.Stderr, "tests: VOICED_BIN is not set. Run `make test` (it builds bin/voiced and exports VOICED_BIN), "+
			"or `make build && eval \"$(make -s env)\"` before `go test ./tests`.")
		return 1
	}
	if _, err := os.Stat(voicedBin); err != nil {
		fmt.Fprintf(os.Stderr, "tests: VOICED_BIN=%s: %v (run `make build`)\n", voicedBin, err)
		return 1
	}
	tmp, err := os.MkdirTemp("", "voiced-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "tests:", err)
		return 1
	}
	defer os.RemoveAll(tmp)

	fixtureDir = filepath.Join(tmp, "mount")
	out, err := exec.Command(voicedBin, "assets", "fixture", fixtureDir).CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "tests: voiced assets fixture: %v\n%s", err, out)
		return 1
	}
	// serve -h prints the flag list and exits non-zero; only the text matters.
	help, _ := exec.Command(voicedBin, "serve", "-h").CombinedOutput()
	serveFlags = map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+-([a-z0-9-]+)`).FindAllSubmatch(help, -1) {
		serveFlags[string(m[1])] = true
	}
	if !serveFlags["bind"] {
		fmt.Fprintf(os.Stderr, "tests: `voiced serve -h` lists no --bind flag:\n%s", help)
		return 1
	}
	testCA, err = newCertAuthority(filepath.Join(tmp, "tls"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "tests: test CA:", err)
		return 1
	}
	code := m.Run()
	if left := childProcesses(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "tests: processes left running by the tests: %v\n", left)
		return 1
	}
	return code
}

// childProcesses lists this process's children still alive (pid: command), from /proc. Every
// voiced and node the tests start is a child; none may outlive the run.
func childProcesses() []string {
	var left []string
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces, so read after the last ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(b[i+1:]))
		if len(fields) > 1 && fields[1] == fmt.Sprint(os.Getpid()) && fields[0] != "Z" {
			left = append(left, string(b[:i+1]))
		}
	}
	return left
}

// needFlag fails t when `voiced serve -h` does not list a flag the test drives: every
// component registers its flags, so a missing one is a regression, not a feature to come.
func needFlag(t testing.TB, names ...string) {
	t.Helper()
	for _, n := range names {
		if !serveFlags[n] {
			t.Fatalf("voiced serve has no --%s flag: the component that owns it no longer registers it", n)
		}
	}
}

// ---- the server under test ----

type serverOpts struct {
	TLS     bool
	NoMount bool
	DataDir string   // "" = a fresh t.TempDir()
	Args    []string // extra serve flags
	Token   string   // the service token; "" = a fresh random one
}

type server struct {
	t       testing.TB
	cmd     *exec.Cmd
	Addr    string // host:port it bound
	Base    string // http(s)://Addr
	WSBase  string // ws(s)://Addr
	Token   string
	Secret  []byte // HS256 principal-JWT key ("" when the binary has no --jwt-secret-file)
	DataDir string
	Client  *http.Client
	logs    *logSink
	exited  chan struct{}
	waitErr error
}

var secretOnce = []byte("voiced-e2e-principal-secret-0123456789abcdef") // ≥ 32 bytes (session.ReadSecretFile)

// startServer runs `voiced serve` on a free loopback port and waits for /health. Cleanup stops it
// with SIGTERM (exit 0 is checked by stop; cleanup only makes sure nothing is left running).
func startServer(t testing.TB, o serverOpts) *server {
	t.Helper()
	dir := t.TempDir()
	s := &server{t: t, Token: o.Token, DataDir: o.DataDir, exited: make(chan struct{})}
	if s.Token == "" {
		s.Token = "e2e-token-" + randHex(8)
	}
	if s.DataDir == "" {
		s.DataDir = filepath.Join(dir, "data")
	}
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(s.Token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"serve", "--bind", "127.0.0.1:0", "--token-file", tokenFile, "--log-format", "json",
		"--data-dir", s.DataDir, "--shutdown-grace", "3s"}
	if !o.NoMount {
		args = append(args, "--speech-assets", fixtureDir)
	}
	// Principal JWTs: every server takes the harness's HS256 secret.
	s.Secret = secretOnce
	secretFile := filepath.Join(dir, "jwt.secret")
	if err := os.WriteFile(secretFile, s.Secret, 0o600); err != nil {
		t.Fatal(err)
	}
	args = append(args, "--jwt-secret-file", secretFile)
	if o.TLS {
		cert, key, err := testCA.leaf(dir)
		if err != nil {
			t.Fatal(err)
		}
		args = append(args, "--tls-cert", cert, "--tls-key", key)
	}
	args = append(args, o.Args...)

	s.logs = newLogSink()
	s.cmd = exec.Command(voicedBin, args...)
	s.cmd.Env = serverEnv()
	s.cmd.Stdout = s.logs
	s.cmd.Stderr = s.logs
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.waitErr = s.cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() { s.ensureGone() })

	select {
	case addr := <-s.logs.listening:
		s.Addr = addr
	case <-s.exited:
		t.Fatalf("voiced serve exited before listening (%v):\n%s", s.waitErr, s.logs)
	case <-time.After(90 * time.Second):
		t.Fatalf("voiced serve did not log 'listening' in 90 s:\n%s", s.logs)
	}
	scheme, wsScheme := "http", "ws"
	tr := &http.Transport{}
	if o.TLS {
		scheme, wsScheme = "https", "wss"
		tr.TLSClientConfig = &tls.Config{RootCAs: testCA.pool}
	}
	s.Base, s.WSBase = scheme+"://"+s.Addr, wsScheme+"://"+s.Addr
	s.Client = &http.Client{Transport: tr, Timeout: 60 * time.Second}
	t.Cleanup(tr.CloseIdleConnections)
	s.waitHealthy()
	return s
}

// serverEnv is this process's environment without VOICED_ settings that would change the server
// under test (a developer's VOICED_SPEECH_ASSETS, VOICED_TOKEN …); the library paths stay.
func serverEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "VOICED_") && name != "VOICED_ORT_LIB" && name != "VOICED_SILERO_MODEL" {
			continue
		}
		env = append(env, kv)
	}
	return env
}

func (s *server) waitHealthy() {
	s.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := s.Client.Get(s.Base + "/health")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			err = fmt.Errorf("%s: %s", resp.Status, body)
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("/health never answered 200: %v\n%s", err, s.logs)
		}
		select {
		case <-s.exited:
			s.t.Fatalf("voiced exited (%v):\n%s", s.waitErr, s.logs)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stop sends SIGTERM and requires exit status 0 within the grace period plus slack.
func (s *server) stop() {
	s.t.Helper()
	select {
	case <-s.exited:
		s.t.Fatalf("voiced had already exited (%v):\n%s", s.waitErr, s.logs)
	default:
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		s.t.Fatal(err)
	}
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		s.t.Fatalf("voiced did not exit 30 s after SIGTERM:\n%s", s.logs)
	}
	if s.waitErr != nil {
		s.t.Fatalf("voiced exited with %v after SIGTERM, want 0:\n%s", s.waitErr, s.logs)
	}
	s.checkGone()
}

// kill9 is the crash: SIGKILL, no flush, no goodbye.
func (s *server) kill9() {
	s.t.Helper()
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.checkGone()
}

// ensureGone is the cleanup: whatever a failed test left, the process does not outlive it.
func (s *server) ensureGone() {
	select {
	case <-s.exited:
	default:
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(15 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
	}
	s.checkGone()
}

// checkGone: the pid no longer names a process (Wait reaped it; nothing of ours is left).
func (s *server) checkGone() {
	if err := syscall.Kill(s.cmd.Process.Pid, 0); !errors.Is(err, syscall.ESRCH) {
		s.t.Errorf("voiced pid %d still exists after exit (kill 0: %v)", s.cmd.Process.Pid, err)
	}
}

// do sends an authenticated request (the service token) and returns status and body.
func (s *server) do(method, path, contentType string, body io.Reader) (int, []byte) {
	s.t.Helper()
	req, err := http.NewRequest(method, s.Base+path, body)
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.Token)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := s.Client.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v\n%s", method, path, err, s.logs)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatalf("%s %s: reading body: %v", method, path, err)
	}
	return resp.StatusCode, b
}

// jwt mints an HS256 principal token for sub (and org when not empty).
func (s *server) jwt(sub, org string) string {
	s.t.Helper()
	claims := map[string]any{"exp": time.Now().Add(10 * time.Minute), "iat": time.Now()}
	if sub != "" {
		claims["sub"] = sub
	}
	if org != "" {
		claims["org"] = org
	}
	return testkit.JWT(s.t, s.Secret, claims)
}

// ---- logs ----

// logSink collects the server's output and announces the "listening" line's address once.
type logSink struct {
	mu        sync.Mutex
	buf       bytes.Buffer
	partial   []byte
	listening chan string
	announced bool
}

func newLogSink() *logSink { return &logSink{listening: make(chan string, 1)} }

func (l *logSink) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		line := l.partial[:i]
		l.partial = l.partial[i+1:]
		if l.announced {
			continue
		}
		var rec struct {
			Msg  string `json:"msg"`
			Addr string `json:"addr"`
		}
		if json.Unmarshal(line, &rec) == nil && rec.Msg == "listening" && rec.Addr != "" {
			l.announced = true
			l.listening <- rec.Addr
		}
	}
	return len(p), nil
}

func (l *logSink) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	const max = 16 << 10
	b := l.buf.Bytes()
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}

// has reports whether the log holds substr.
func (l *logSink) has(substr string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Contains(l.buf.Bytes(), []byte(substr))
}

// ---- leaks ----

// checkLeaks records the goroutine count now and, at cleanup (after the servers' cleanups, which
// were registered later and so run first), waits for it to come back down and for the processes
// the test started to exit.
func checkLeaks(t testing.TB) {
	t.Helper()
	testkit.Leaks{
		Settle: http.DefaultClient.CloseIdleConnections,
		Others: func() string {
			if kids := childProcesses(); len(kids) > 0 {
				return fmt.Sprintf("processes started by the test: %v", kids)
			}
			return ""
		},
	}.Check(t)
}

// ---- TLS ----

type certAuthority struct {
	dir    string
	CAFile string
	pool   *x509.CertPool
	cert   *x509.Certificate
	key    *ecdsa.PrivateKey
}

func newCertAuthority(dir string) (*certAuthority, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "voiced e2e test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	ca := &certAuthority{dir: dir, CAFile: filepath.Join(dir, "ca.pem"), pool: x509.NewCertPool(), cert: cert, key: key}
	ca.pool.AddCert(cert)
	return ca, os.WriteFile(ca.CAFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
}

// leaf writes a server certificate for 127.0.0.1 and localhost into dir.
func (ca *certAuthority) leaf(dir string) (certFile, keyFile string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return "", "", err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", "", err
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return "", "", err
	}
	return certFile, keyFile, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%x", b)
}

// ctxT is a context bounded for one test step.
func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
