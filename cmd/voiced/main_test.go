package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
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

	"github.com/voiced/voiced/speechcore/assets"
)

const testVersion = "voiced-test-1.2.3"

// binDir holds the binary under test, built on first use with the tests' own cgo environment
// (and -race when the tests run with it).
var (
	binDir    string
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// voicedBin builds the binary once and returns its path.
func voicedBin(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "voiced-bin")
		if buildErr != nil {
			return
		}
		builtBin = filepath.Join(binDir, "voiced")
		args := []string{"build", "-o", builtBin, "-ldflags", "-X main.version=" + testVersion}
		if raceEnabled {
			args = append(args, "-race")
		}
		out, err := exec.Command("go", append(args, ".")...).CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

// baseEnv is the environment without any VOICED_ variable except the ORT library the Makefile
// names, so a developer's shell cannot change what a test sees.
func baseEnv(t *testing.T) []string {
	t.Helper()
	lib := os.Getenv("VOICED_ORT_LIB")
	if lib == "" {
		t.Skip("VOICED_ORT_LIB is not set: run through make (make test) or eval \"$(make -s env)\"")
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "VOICED_") {
			env = append(env, kv)
		}
	}
	return append(env, "VOICED_ORT_LIB="+lib)
}

type result struct {
	code           int
	stdout, stderr string
}

// runVoiced runs the binary to completion.
func runVoiced(t *testing.T, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, voicedBin(t), args...)
	cmd.Env = env
	cmd.Dir = t.TempDir() // relative defaults (--data-dir) land there, not in the package
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run voiced %v: %v", args, err)
	}
	return result{code, out.String(), errb.String()}
}

func TestVersion(t *testing.T) {
	r := runVoiced(t, baseEnv(t), "--version")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "voiced "+testVersion {
		t.Fatalf("--version: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

func TestUnknownCommand(t *testing.T) {
	r := runVoiced(t, baseEnv(t), "frobnicate")
	if r.code != 2 || !strings.Contains(r.stderr, `unknown command "frobnicate"`) {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestRefusedStarts(t *testing.T) {
	dir := t.TempDir()
	emptyToken := filepath.Join(dir, "empty-token")
	os.WriteFile(emptyToken, []byte(" \n\t"), 0o600)
	corrupt := writeTestMount(t)
	os.WriteFile(filepath.Join(corrupt, filepath.FromSlash(assets.SileroModel)), []byte("half-synced"), 0o644)
	tests := []struct {
		name     string
		env      []string
		args     []string
		wantCode int
		wantErr  []string // substrings of stderr
	}{
		{"unknown flag", nil, []string{"--no-such-flag"}, 2, []string{"-no-such-flag"}},
		{"stray argument", nil, []string{"frobnicate"}, 2, []string{`unexpected argument "frobnicate"`}},
		{"no token", nil, []string{"--bind", "127.0.0.1:0"}, 1, []string{"no service token", "--insecure-no-auth"}},
		{"missing token file", nil, []string{"--token-file", filepath.Join(dir, "absent")}, 1, []string{"token file", "absent"}},
		{"empty token file", nil, []string{"--token-file", emptyToken}, 1, []string{"empty"}},
		{"empty VOICED_TOKEN", []string{"VOICED_TOKEN=   "}, nil, 1, []string{"VOICED_TOKEN is empty"}},
		{"token and insecure both", []string{"VOICED_TOKEN=t"}, []string{"--insecure-no-auth"}, 1, []string{"choose one"}},
		{"missing ORT library", []string{"VOICED_TOKEN=t"}, []string{"--ort-lib", filepath.Join(dir, "libonnxruntime.so.1")}, 1, []string{"onnx runtime library not found", "--ort-lib"}},
		{"bad variable value", []string{"VOICED_TOKEN=t", "VOICED_MAX_SPEECH_SESSIONS=many"}, nil, 2, []string{"VOICED_MAX_SPEECH_SESSIONS"}},
		{"bad log format", []string{"VOICED_TOKEN=t"}, []string{"--log-format", "xml"}, 2, []string{"--log-format"}},
		{"half a TLS pair", []string{"VOICED_TOKEN=t"}, []string{"--tls-cert", filepath.Join(dir, "cert.pem")}, 1, []string{"--tls-key"}},
		{"negative body rate", []string{"VOICED_TOKEN=t"}, []string{"--http-body-min-rate", "-1"}, 1, []string{"listener limits must not be negative"}},
		{"event bytes burst under 1 MiB", []string{"VOICED_TOKEN=t"}, []string{"--event-bytes-burst", "65536"}, 1, []string{"--event-bytes-burst"}},
		{"conversation bytes under 1 MiB", []string{"VOICED_TOKEN=t"}, []string{"--max-conversation-bytes", "1000"}, 1, []string{"--max-conversation-bytes"}},
		{"debug listener off the loopback", []string{"VOICED_TOKEN=t"}, []string{"--debug-addr", "0.0.0.0:6060"}, 1, []string{"--debug-addr", "loopback"}},
		{"unknown device", []string{"VOICED_TOKEN=t"}, []string{"--device", "tpu"}, 1, []string{"unknown device"}},
		{"webrtc disconnect under its floor", []string{"VOICED_TOKEN=t"}, []string{"--webrtc-disconnect-timeout", "1s"}, 1, []string{"--webrtc-disconnect-timeout must be at least 2s"}},
		{"corrupt mount", []string{"VOICED_TOKEN=t"}, []string{"--speech-assets", corrupt}, 1, []string{assets.SileroModel, "digest mismatch", "sha256sum -c MODELS.sha256"}},
		{"missing mount", []string{"VOICED_TOKEN=t", "VOICED_SPEECH_ASSETS=" + filepath.Join(dir, "nowhere")}, nil, 1, []string{"nowhere", "mount directory not found"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := runVoiced(t, append(baseEnv(t), tc.env...), append([]string{"serve", "--bind", "127.0.0.1:0"}, tc.args...)...)
			if r.code != tc.wantCode {
				t.Fatalf("exit %d, want %d; stderr:\n%s", r.code, tc.wantCode, r.stderr)
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
				}
			}
			if strings.Contains(r.stderr, "msg=listening") {
				t.Errorf("a refused start bound the listener:\n%s", r.stderr)
			}
		})
	}
}

// server is a voiced serve process the test owns.
type server struct {
	t    *testing.T
	cmd  *exec.Cmd
	addr string
	logs chan string // stderr lines after the listening line
	done chan error
}

// listeningAddr finds the bound address in the text or the JSON log line.
var listeningAddr = regexp.MustCompile(`msg=listening addr=(\S+)|"msg":"listening","addr":"([^"]+)"`)

// startServer runs voiced serve and waits for its listening line.
func startServer(t *testing.T, env []string, args ...string) *server {
	t.Helper()
	cmd := exec.Command(voicedBin(t), append([]string{"serve", "--bind", "127.0.0.1:0"}, args...)...)
	cmd.Env = env
	cmd.Dir = t.TempDir() // relative defaults (--data-dir) land there, not in the package
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{t: t, cmd: cmd, logs: make(chan string, 1000), done: make(chan error, 1)}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		found := false
		for sc.Scan() {
			line := sc.Text()
			if m := listeningAddr.FindStringSubmatch(line); m != nil && !found {
				found = true
				addr <- m[1] + m[2]
			}
			select {
			case s.logs <- line:
			default:
			}
		}
		close(addr)
		s.done <- cmd.Wait()
		close(s.logs)
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-s.done
		}
	})
	select {
	case a, ok := <-addr:
		if !ok {
			t.Fatalf("voiced exited before listening: %v\n%s", <-s.done, drain(s.logs))
		}
		s.addr = a
	case <-time.After(2 * time.Minute):
		t.Fatalf("voiced did not listen within 2 minutes\n%s", drain(s.logs))
	}
	return s
}

func drain(c chan string) string {
	var b strings.Builder
	for {
		select {
		case l, ok := <-c:
			if !ok {
				return b.String()
			}
			b.WriteString(l + "\n")
		default:
			return b.String()
		}
	}
}

// stop sends sig and returns the exit code.
func (s *server) stop(sig os.Signal) int {
	s.t.Helper()
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.t.Fatal(err)
	}
	return s.wait()
}

// wait returns the exit code once the process has exited.
func (s *server) wait() int {
	s.t.Helper()
	select {
	case err := <-s.done:
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		if err != nil {
			s.t.Fatal(err)
		}
		return 0
	case <-time.After(time.Minute):
		s.t.Fatalf("voiced did not exit within a minute")
		return -1
	}
}

// errorOf reads an error body in either shape: the doors' {"type":"error","name","message"} or
// the realtime routes' OpenAI-style {"error":{"code","message"}}.
func errorOf(body map[string]any) (name, message string) {
	if e, ok := body["error"].(map[string]any); ok {
		name, _ = e["code"].(string)
		message, _ = e["message"].(string)
		return name, message
	}
	name, _ = body["name"].(string)
	message, _ = body["message"].(string)
	return name, message
}

type response struct {
	status int
	header http.Header
	body   map[string]any
}

// request sends method to url with the token; method "WS" is a GET with a WebSocket handshake's
// headers (a socket route refuses anything else before its own checks).
func request(t *testing.T, client *http.Client, method, url, token string) response {
	t.Helper()
	ws := method == "WS"
	if ws {
		method = "GET"
	}
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ws {
		for k, v := range map[string]string{"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
			"Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="} {
			req.Header.Set(k, v)
		}
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := response{status: resp.StatusCode, header: resp.Header}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &r.body); err != nil {
			t.Fatalf("%s %s: body %q is not JSON: %v", method, url, raw, err)
		}
	}
	return r
}

func TestServeWithoutMount(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tokenFile, []byte("  s3cret-token\n"), 0o600) // surrounding whitespace is trimmed
	// The flag wins over the variable: VOICED_BIND names a port nobody can have.
	srv := startServer(t, append(baseEnv(t), "VOICED_BIND=256.0.0.1:1"), "--token-file", tokenFile)
	base := "http://" + srv.addr
	c := http.DefaultClient
	const tok = "s3cret-token"
	tests := []struct {
		name, method, path, token string
		wantStatus                int
		wantName                  string // error name in the JSON body
	}{
		{"health needs no token", "GET", "/health", "", 200, ""},
		{"page needs no token", "GET", "/", "", 200, ""},
		{"speech health without token", "GET", "/v1/speech/health", "", 401, "unauthorized"},
		{"transcribe without token", "GET", "/v1/transcribe", "", 401, "unauthorized"},
		{"wrong token", "GET", "/v1/transcribe", "s3cret-tokem", 401, "unauthorized"},
		{"unknown route without token", "GET", "/v1/nothing", "", 401, "unauthorized"},
		{"transcribe not mounted", "GET", "/v1/transcribe", tok, 503, "speech_assets_not_mounted"},
		{"synthesize not mounted", "GET", "/v1/synthesize", tok, 503, "speech_assets_not_mounted"},
		{"audio speech not mounted", "POST", "/v1/audio/speech", tok, 503, "speech_assets_not_mounted"},
		{"transcript push not mounted", "POST", "/v1/audio/transcript/abc", tok, 503, "speech_assets_not_mounted"},
		{"realtime not mounted", "WS", "/v1/realtime?model=x", tok, 503, "speech_assets_not_mounted"},
		{"voice not mounted", "WS", "/v1/voice?ticket=x", tok, 503, "speech_assets_not_mounted"},
		{"voice without a handshake", "GET", "/v1/voice?ticket=x", tok, 426, "websocket_upgrade_required"},
		{"unknown route", "GET", "/v1/nothing", tok, 404, "not_found"},
		{"unknown conversation route", "GET", "/v1/voice/nothing", tok, 404, "not_found"}, // no URL-prefix 503: each door refuses itself
		{"speech health not mounted", "GET", "/v1/speech/health", tok, 503, "speech_assets_not_mounted"},
		{"live", "GET", "/health/live", "", 200, ""},
		{"ready without a mount", "GET", "/health/ready", "", 503, "speech_assets_not_mounted"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := request(t, c, tc.method, base+tc.path, tc.token)
			if r.status != tc.wantStatus {
				t.Fatalf("status %d, want %d (body %v)", r.status, tc.wantStatus, r.body)
			}
			name, msg := errorOf(r.body)
			if tc.wantName != "" && name != tc.wantName {
				t.Errorf("error name %q, want %s (body %v)", name, tc.wantName, r.body)
			}
			if r.status == 401 && !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("401 without WWW-Authenticate: Bearer (got %q)", r.header.Get("WWW-Authenticate"))
			}
			if tc.wantName == "speech_assets_not_mounted" {
				for _, want := range []string{"--speech-assets", "VOICED_SPEECH_ASSETS", "MODELS.sha256", "models/whisper-small"} {
					if !strings.Contains(msg, want) {
						t.Errorf("message %q does not name %s", msg, want)
					}
				}
			}
		})
	}

	h := request(t, c, "GET", base+"/health", "").body
	want := map[string]any{
		"status": "ok", "version": testVersion,
		"speech": map[string]any{"built": true, "mounted": false, "assetsVersion": nil, "warm": false},
	}
	voice, _ := h["voice"].(map[string]any)
	delete(h, "voice")
	if fmt.Sprint(h) != fmt.Sprint(want) {
		t.Errorf("/health = %v\nwant %v", h, want)
	}
	// Without a mount no conversation can be served, whatever the capacity (--max-conversations).
	if _, hasBusy := voice["busy"]; voice["ok"] != false || !hasBusy || voice["capacity"] == nil {
		t.Errorf("/health voice = %v, want ok:false with busy and capacity", voice)
	}

	if code := srv.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("SIGTERM: exit %d, want 0\n%s", code, drain(srv.logs))
	}
}

// The variables configure what the flags leave unset: here the token itself and the log format.
func TestServeFromEnvironment(t *testing.T) {
	srv := startServer(t, append(baseEnv(t), "VOICED_TOKEN=env-token", "VOICED_LOG_FORMAT=json"))
	for _, line := range strings.Split(strings.TrimSpace(drain(srv.logs)), "\n") {
		var v map[string]any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Errorf("log line is not JSON: %q", line)
		}
	}
	base := "http://" + srv.addr
	if r := request(t, http.DefaultClient, "GET", base+"/v1/usage", "env-token"); r.status != 200 {
		t.Errorf("VOICED_TOKEN not honoured: status %d", r.status)
	}
	if r := request(t, http.DefaultClient, "GET", base+"/v1/usage", ""); r.status != 401 {
		t.Errorf("no token: status %d, want 401", r.status)
	}
	if code := srv.stop(syscall.SIGINT); code != 0 {
		t.Fatalf("SIGINT: exit %d, want 0", code)
	}
}

func TestServeInsecureNoAuth(t *testing.T) {
	srv := startServer(t, baseEnv(t), "--insecure-no-auth")
	if r := request(t, http.DefaultClient, "GET", "http://"+srv.addr+"/v1/usage", ""); r.status != 200 {
		t.Errorf("--insecure-no-auth: status %d, want 200", r.status)
	}
	if code := srv.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("SIGTERM: exit %d", code)
	}
}

func TestServeTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	pool := writeSelfSigned(t, certFile, keyFile)
	srv := startServer(t, append(baseEnv(t), "VOICED_TOKEN=t"), "--tls-cert", certFile, "--tls-key", keyFile)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	r := request(t, client, "GET", "https://"+srv.addr+"/health", "")
	if r.status != 200 || r.body["status"] != "ok" {
		t.Errorf("https /health: %d %v", r.status, r.body)
	}
	if code := srv.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("SIGTERM: exit %d", code)
	}
}

// writeSelfSigned writes a certificate for 127.0.0.1 and returns a pool that trusts it.
func writeSelfSigned(t *testing.T, certFile, keyFile string) *x509.CertPool {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "voiced test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return pool
}

// writeTestMount writes a mount with the layout and a valid manifest; its files are not models.
func writeTestMount(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for i, rel := range assets.RequiredFiles {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(fmt.Sprintf("not a model %d\n", i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := assets.WriteManifest(dir, "test-mount-7"); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestAssetsVerify(t *testing.T) {
	good := writeTestMount(t)
	bad := writeTestMount(t)
	os.WriteFile(filepath.Join(bad, filepath.FromSlash(assets.KokoroDir+"/model.onnx")), []byte("truncated"), 0o644)
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout []string
		wantStderr []string
	}{
		{"good mount", []string{good}, 0, []string{"version: test-mount-7", assets.SileroModel + ": OK", "OK: 9 files proved"}, nil},
		{"corrupt file", []string{bad}, 1, []string{"version: test-mount-7", assets.KokoroDir + "/model.onnx: FAILED (digest mismatch)", assets.SileroModel + ": OK", "REFUSED"},
			[]string{"sha256sum -c MODELS.sha256"}},
		{"no directory", nil, 2, nil, []string{"usage: voiced assets verify DIR"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := runVoiced(t, baseEnv(t), append([]string{"assets", "verify"}, tc.args...)...)
			if r.code != tc.wantCode {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tc.wantCode, r.stdout, r.stderr)
			}
			for _, want := range tc.wantStdout {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
				}
			}
			for _, want := range tc.wantStderr {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
				}
			}
		})
	}
}

// writeFixtureMount writes the codec fixture mount with `voiced assets fixture`.
func writeFixtureMount(t *testing.T) string {
	t.Helper()
	silero := os.Getenv("VOICED_SILERO_MODEL")
	if silero == "" {
		t.Skip("VOICED_SILERO_MODEL is not set: run through make or eval \"$(make -s env)\"")
	}
	dir := filepath.Join(t.TempDir(), "mount")
	r := runVoiced(t, append(baseEnv(t), "VOICED_SILERO_MODEL="+silero), "assets", "fixture", dir)
	if r.code != 0 {
		t.Fatalf("voiced assets fixture: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	return dir
}

// The fixture mount is a valid mount: assets verify proves it, and a server mounted on it reports
// its version. Warm is reported as measured (true once every engine loads and warms).
func TestServeMounted(t *testing.T) {
	mount := writeFixtureMount(t)
	v := runVoiced(t, baseEnv(t), "assets", "verify", mount)
	if v.code != 0 {
		t.Fatalf("assets verify on the fixture mount: exit %d\n%s%s", v.code, v.stdout, v.stderr)
	}
	m, err := assets.Open(mount)
	if err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, append(baseEnv(t), "VOICED_TOKEN=t", "VOICED_SPEECH_ASSETS="+mount))
	base := "http://" + srv.addr
	h := request(t, http.DefaultClient, "GET", base+"/health", "").body
	speech, _ := h["speech"].(map[string]any)
	if speech["mounted"] != true || speech["assetsVersion"] != m.Version {
		t.Errorf("/health speech = %v, want mounted with version %q", speech, m.Version)
	}
	sh := request(t, http.DefaultClient, "GET", base+"/v1/speech/health", "t").body
	a, _ := sh["assets"].(map[string]any)
	if a["version"] != m.Version || a["filesProved"] != float64(m.FilesProved()) || a["mount"] != m.Dir {
		t.Errorf("/v1/speech/health assets = %v", a)
	}
	if sh["warm"] != speech["warm"] {
		t.Errorf("warm differs: /health %v, /v1/speech/health %v", speech["warm"], sh["warm"])
	}
	// A mounted server never answers speech_assets_not_mounted.
	r := request(t, http.DefaultClient, "POST", base+"/v1/audio/transcript", "t")
	if r.body["name"] == "speech_assets_not_mounted" {
		t.Errorf("mounted server answered %v", r.body)
	}
	if warm, _ := sh["warm"].(bool); !warm && r.body["name"] != "speech_not_warm" {
		t.Errorf("not warm, yet a door answered %d %v", r.status, r.body)
	}
	if code := srv.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("SIGTERM: exit %d", code)
	}
}
