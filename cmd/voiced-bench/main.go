// Command voiced-bench measures a running voiced server over loopback: streaming transcription
// (transcribe), streaming synthesis (synthesize) and the realtime conversation's answer latency,
// capacity and memory (converse). Every run is bounded in requests and time and stops by itself.
//
//	voiced-bench transcribe -url http://127.0.0.1:8200 -token-file var/token -n 4 -duration 20s
//	voiced-bench synthesize -token-file var/token -n 2 -duration 20s -json out.json
//	voiced-bench converse  -token-file var/token -jwt-secret-file var/jwt.secret -turns 20
//	voiced-bench soak      -token-file var/token -jwt-secret-file var/jwt.secret -duration 10m -png soak.png
//
// Results print as a table (p50/p95/p99 per measurement, nearest rank) and, with -json, as JSON.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		usage(os.Stderr)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var err error
	switch mode, args := os.Args[1], os.Args[2:]; mode {
	case "transcribe":
		err = runTranscribe(ctx, args)
	case "synthesize":
		err = runSynthesize(ctx, args)
	case "converse":
		err = runConverse(ctx, args)
	case "soak":
		err = runSoak(ctx, args)
	case "-h", "-help", "--help", "help":
		usage(os.Stdout)
		return
	default:
		fmt.Fprintf(os.Stderr, "voiced-bench: unknown mode %q\n", mode)
		usage(os.Stderr)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "voiced-bench:", err)
		os.Exit(1)
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: voiced-bench transcribe|synthesize|converse [flags]   (voiced-bench MODE -h lists the flags)

transcribe  N concurrent WS /v1/transcribe sessions streaming real speech, paced or as fast as possible
synthesize  N concurrent WS /v1/synthesize sockets speaking sentences
converse    realtime conversation: answer latency split by stage, conversations per core, memory per idle conversation
soak        N conversations (reconnecting) + raw doors for -duration; samples memory, goroutines, files, queue, latency; verdict + JSON + PNG
`)
}

// common are the flags every mode takes.
type common struct {
	base      *url.URL
	token     string
	jsonOut   string
	timeout   time.Duration
	rawURL    string
	tokenFile string
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.rawURL, "url", "http://127.0.0.1:8200", "the server (loopback only: 127.0.0.0/8, ::1 or localhost)")
	fs.StringVar(&c.tokenFile, "token-file", "", "file holding the service token (else $VOICED_TOKEN)")
	fs.StringVar(&c.jsonOut, "json", "", "also write the results as JSON to this file (- for stdout)")
	fs.DurationVar(&c.timeout, "timeout", 2*time.Minute, "hard limit on the whole run")
}

func (c *common) parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	u, err := loopbackURL(c.rawURL)
	if err != nil {
		return err
	}
	c.base = u
	c.token = os.Getenv("VOICED_TOKEN")
	if c.tokenFile != "" {
		b, err := os.ReadFile(c.tokenFile)
		if err != nil {
			return fmt.Errorf("-token-file: %w", err)
		}
		c.token = strings.TrimSpace(string(b))
	}
	if c.timeout <= 0 || c.timeout > 30*time.Minute {
		return errors.New("-timeout must be within (0, 30m]")
	}
	return nil
}

// loopbackURL refuses any server that is not on this machine's loopback.
func loopbackURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("-url: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("-url %q: want http:// or https://", raw)
	}
	host := u.Hostname()
	if host == "localhost" {
		return u, nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("-url %q: voiced-bench talks to loopback servers only", raw)
	}
	return u, nil
}

// ws is the WebSocket URL of path (with query) on the server.
func (c *common) ws(pathQuery string) string {
	u := *c.base
	if u.Scheme == "https" {
		u.Scheme = "wss"
	} else {
		u.Scheme = "ws"
	}
	return strings.TrimSuffix(u.String(), "/") + pathQuery
}

func (c *common) http(path string) string { return strings.TrimSuffix(c.base.String(), "/") + path }

func (c *common) authHeader() http.Header {
	h := http.Header{}
	if c.token != "" {
		h.Set("Authorization", "Bearer "+c.token)
	}
	return h
}

// getJSON fetches path with the service token into v.
func (c *common) getJSON(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.http(path), nil)
	if err != nil {
		return err
	}
	req.Header = c.authHeader()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("GET %s: %s: %s", path, resp.Status, strings.TrimSpace(string(b)))
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// Report is one mode's results.
type Report struct {
	Mode    string             `json:"mode"`
	Started time.Time          `json:"started"`
	WallS   float64            `json:"wallS"`
	Host    map[string]any     `json:"host"`
	Params  map[string]any     `json:"params"`
	Metrics []Metric           `json:"metrics"`
	Values  map[string]float64 `json:"values,omitempty"`
	Errors  map[string]int     `json:"errors,omitempty"`
	Notes   []string           `json:"notes,omitempty"`
}

// Metric is one summarized series.
type Metric struct {
	Name string `json:"name"`
	Unit string `json:"unit"`
	Note string `json:"note,omitempty"`
	Summary
}

func newReport(mode string, params map[string]any) *Report {
	return &Report{Mode: mode, Started: time.Now().UTC(), Params: params, Values: map[string]float64{},
		Errors: map[string]int{},
		Host:   map[string]any{"cpus": runtime.NumCPU(), "goos": runtime.GOOS, "goarch": runtime.GOARCH}}
}

func (r *Report) add(series ...*Series) error {
	for _, s := range series {
		sum, err := Summarize(s.Samples())
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		r.Metrics = append(r.Metrics, Metric{Name: s.Name, Unit: s.Unit, Note: s.Note, Summary: sum})
	}
	return nil
}

// write prints the table and, when asked, the JSON.
func (r *Report) write(c *common) error {
	w := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Printf("== voiced-bench %s  (%s, %.1f s wall, %d CPUs here)\n", r.Mode, r.Started.Format(time.RFC3339), r.WallS, runtime.NumCPU())
	var ps []string
	for k, v := range r.Params {
		ps = append(ps, fmt.Sprintf("%s=%v", k, v))
	}
	slices.Sort(ps)
	fmt.Println("   " + strings.Join(ps, " "))
	fmt.Fprintln(w, "measurement\tunit\tn\tp50\tp95\tp99\tmin\tmax\tmean\t")
	for _, m := range r.Metrics {
		if m.N == 0 {
			fmt.Fprintf(w, "%s\t%s\t0\t-\t-\t-\t-\t-\t-\t\n", m.Name, m.Unit)
			continue
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n", m.Name, m.Unit, m.N,
			num(m.P50), num(m.P95), num(m.P99), num(m.Min), num(m.Max), num(m.Mean))
	}
	w.Flush()
	var ks []string
	for k := range r.Values {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	for _, k := range ks {
		fmt.Printf("   %s = %s\n", k, num(r.Values[k]))
	}
	for k, v := range r.Errors {
		fmt.Printf("   errors %s: %d\n", k, v)
	}
	for _, m := range r.Metrics {
		if m.Note != "" {
			fmt.Printf("   note %s: %s\n", m.Name, m.Note)
		}
	}
	for _, n := range r.Notes {
		fmt.Println("   note: " + n)
	}
	fmt.Println()
	if c.jsonOut == "" {
		return nil
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if c.jsonOut == "-" {
		_, err = os.Stdout.Write(b)
		return err
	}
	return os.WriteFile(c.jsonOut, b, 0o644)
}

func num(x float64) string {
	switch {
	case x == 0:
		return "0"
	case x >= 1000 || x <= -1000:
		return fmt.Sprintf("%.0f", x)
	case x >= 10 || x <= -10:
		return fmt.Sprintf("%.1f", x)
	default:
		return fmt.Sprintf("%.3g", x)
	}
}

// errCounter counts failures by kind across goroutines.
type errCounter struct {
	mu sync.Mutex
	m  map[string]int
}

func (e *errCounter) add(kind string, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.m == nil {
		e.m = map[string]int{}
	}
	key := kind
	if err != nil {
		msg := err.Error()
		if len(msg) > 120 {
			msg = msg[:120]
		}
		key = kind + ": " + msg
	}
	e.m[key]++
}

func (e *errCounter) into(r *Report) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for k, v := range e.m {
		r.Errors[k] += v
	}
}
