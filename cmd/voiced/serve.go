package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/speechcore"
)

// serverConfig is the listener, shutdown and logging: the flags every server has.
type serverConfig struct {
	bind          string
	tlsCert       string
	tlsKey        string
	shutdownGrace time.Duration
	drainDelay    time.Duration
	allowOrigin   string
	logFormat     string
	logLevel      string
	limits        door.Limits // the listener's deadlines (--http-*)
}

func (c *serverConfig) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.bind, "bind", "127.0.0.1:8200", "address to listen on (host:port; port 0 picks a free one, logged as addr=)")
	fs.StringVar(&c.tlsCert, "tls-cert", "", "TLS certificate (PEM); with --tls-key serves https/wss")
	fs.StringVar(&c.tlsKey, "tls-key", "", "TLS private key (PEM)")
	fs.DurationVar(&c.shutdownGrace, "shutdown-grace", 10*time.Second, "on SIGTERM/SIGINT, how long open sessions may finish before they are cancelled")
	fs.DurationVar(&c.drainDelay, "drain-delay", 0, "on SIGTERM/SIGINT, how long the listener stays open (GET /health/ready answering 503, new conversations refused) before it closes, so a load balancer sees the drain; part of --shutdown-grace")
	fs.StringVar(&c.allowOrigin, "allow-origin", "", "comma-separated browser origins (https://app.example.com, https://*.example.com) or host patterns (*.example.com) allowed to open a socket or call a browser route; a page from this host is always allowed")
	fs.StringVar(&c.logFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&c.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.DurationVar(&c.limits.HeaderTimeout, "http-header-timeout", door.DefaultHeaderTimeout, "how long a client may take to send a request's line and headers before the connection is closed")
	fs.DurationVar(&c.limits.IdleTimeout, "http-idle-timeout", door.DefaultIdleTimeout, "how long a keep-alive connection may wait for its next request before it is closed (keep it above a load balancer's own idle timeout)")
	fs.DurationVar(&c.limits.BodyGrace, "http-body-grace", door.DefaultBodyGrace, "how long any request body may take before --http-body-min-rate counts")
	fs.IntVar(&c.limits.BodyMinRate, "http-body-min-rate", door.DefaultBodyMinRate, "bytes per second a request body must average after --http-body-grace, or the connection is closed (a WebSocket, which has no body, is not paced)")
}

func (c *serverConfig) logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.logLevel)); err != nil {
		return nil, fmt.Errorf("--log-level %q: use debug, info, warn or error", c.logLevel)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch c.logFormat {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: use text or json", c.logFormat)
}

func (c *serverConfig) tlsConfig() (*tls.Config, error) {
	if c.tlsCert == "" && c.tlsKey == "" {
		return nil, nil
	}
	if c.tlsCert == "" || c.tlsKey == "" {
		return nil, errors.New("TLS needs both --tls-cert and --tls-key")
	}
	cert, err := tls.LoadX509KeyPair(c.tlsCert, c.tlsKey)
	if err != nil {
		return nil, fmt.Errorf("load TLS key pair (--tls-cert %s, --tls-key %s): %w", c.tlsCert, c.tlsKey, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// socketForceWait bounds the wait for sockets after their contexts are cancelled.
const socketForceWait = 5 * time.Second

// stopTimeout bounds the parts' stops (flushes) after the sockets are gone.
const stopTimeout = 30 * time.Second

// serve parses the flags, validates every part, starts them in order (parts.go), binds the
// listener and serves until SIGTERM/SIGINT. It returns the exit status.
func serve(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("voiced serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg serverConfig
	cfg.flags(fs)
	var p parts
	p.flags(fs)
	withEnvNames(fs)
	fs.Usage = func() { fmt.Fprintln(stderr, "voiced serve: voiced serve -h lists every flag") }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stdout, "usage: voiced serve [flags]\n\nEach flag can be set by the variable in brackets; the flag wins.\n\n")
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return 0
		}
		return 2 // the flag package has printed the problem and the usage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "voiced serve: unexpected argument %q (flags only; see voiced serve -h)\n", fs.Arg(0))
		return 2
	}
	fromEnv, err := applyEnv(fs, lookupEnv)
	if err != nil {
		fmt.Fprintf(stderr, "voiced: %v\n", err)
		return 2
	}
	log, err := cfg.logger(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "voiced: %v\n", err)
		return 2
	}
	fail := func(stage string, err error, attrs ...any) int {
		log.Error("voiced not started: "+stage, append(attrs, "err", err.Error())...)
		return 1
	}
	tlsCfg, err := cfg.tlsConfig()
	if err != nil {
		return fail("configuration refused", err)
	}
	if cfg.shutdownGrace < 0 {
		return fail("configuration refused", fmt.Errorf("--shutdown-grace %v must be >= 0", cfg.shutdownGrace))
	}
	if err := cfg.limits.Validate(); err != nil {
		return fail("configuration refused", err)
	}
	if cfg.drainDelay < 0 || cfg.drainDelay > cfg.shutdownGrace {
		return fail("configuration refused", fmt.Errorf("--drain-delay %v must be between 0 and --shutdown-grace %v", cfg.drainDelay, cfg.shutdownGrace))
	}
	origins, err := door.ParseOrigins(splitList(cfg.allowOrigin))
	if err != nil {
		return fail("configuration refused", err)
	}
	app := &App{
		Origins: origins,
		Version: version,
		Log:     log,
		Sockets: door.NewSockets(),
		Metrics: newMetricsRegistry(),
		mux:     http.NewServeMux(),
		flagSet: fs,
		fromEnv: fromEnv,
	}
	// Everything is validated before anything starts: nothing starts half-configured.
	if part, err := p.validate(app); err != nil {
		return fail("configuration refused", err, "component", part)
	}

	ctx, stopSignals := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stopSignals()
	if part, err := p.start(ctx, app); err != nil {
		app.runShutdown()
		if ctx.Err() != nil {
			log.Info("start interrupted by signal", "component", part)
			return 0
		}
		return fail("start refused", err, "component", part)
	}
	app.mux.Handle("/", requireAuth(app, http.HandlerFunc(app.serveFallback)))

	ln, err := net.Listen("tcp", cfg.bind)
	if err != nil {
		app.runShutdown()
		return fail("listen", err, "bind", cfg.bind)
	}
	app.mu.Lock()
	listened := app.listened
	app.mu.Unlock()
	for _, fn := range listened {
		fn(ln.Addr(), tlsCfg != nil)
	}
	srv := &http.Server{
		Handler:   app.mux,
		TLSConfig: tlsCfg,
		ErrorLog:  slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	cfg.limits.Apply(srv) // header, idle and body deadlines; no whole-request deadline (sockets live long)
	served := make(chan error, 1)
	go func() {
		if tlsCfg != nil {
			served <- srv.ServeTLS(ln, "", "")
		} else {
			served <- srv.Serve(ln)
		}
	}()
	log.Info("listening", "addr", ln.Addr().String(), "tls", tlsCfg != nil, "version", version)

	select {
	case <-ctx.Done():
	case err := <-served:
		app.runShutdown()
		return fail("serve", err)
	}
	stopSignals()            // a second signal now kills the process the default way
	app.draining.Store(true) // GET /health/ready answers 503 from now on
	log.Info("shutting down", "grace", cfg.shutdownGrace.String(), "drainDelay", cfg.drainDelay.String(), "openSockets", app.Sockets.Open())

	grace, cancel := context.WithTimeout(context.Background(), cfg.shutdownGrace)
	defer cancel()
	type drained struct{ cancelled, stuck int }
	socketsDone := make(chan drained, 1)
	go func() {
		c, s := app.Sockets.Shutdown(grace, socketForceWait) // new sockets refused, open ones drain
		socketsDone <- drained{c, s}
	}()
	// The listener stays open for the drain delay, so a load balancer polling /health/ready sees
	// 503 and stops sending before connections are refused.
	select {
	case <-time.After(cfg.drainDelay):
	case <-grace.Done():
	}
	httpDone := make(chan error, 1)
	go func() { httpDone <- srv.Shutdown(grace) }()
	d := <-socketsDone
	cancelled, stuck := d.cancelled, d.stuck
	if err := <-httpDone; err != nil {
		log.Warn("open requests outlived the grace period; closing them", "err", err.Error())
		srv.Close()
	}
	<-served
	if cancelled > 0 {
		log.Warn("sockets cancelled at the end of the grace period", "count", cancelled)
	}
	if stuck > 0 {
		log.Error("sockets did not close after cancellation", "count", stuck)
	}
	app.runShutdown()
	log.Info("stopped")
	return 0
}

// runShutdown runs the shutdown hooks (the parts' stops included) in reverse order, each once.
func (a *App) runShutdown() {
	a.mu.Lock()
	hooks := a.shutdown
	a.shutdown = nil
	a.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	for i := len(hooks) - 1; i >= 0; i-- {
		if err := hooks[i](ctx); err != nil {
			a.Log.Error("shutdown hook failed", "err", err.Error())
		}
	}
}

// serveFallback answers what no route claimed (after the token check): the conversation's routes
// when nothing is mounted are 503 speech_assets_not_mounted, anything else 404.
func (a *App) serveFallback(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	speechPath := p == "/v1/voice" || strings.HasPrefix(p, "/v1/voice/") || strings.HasPrefix(p, "/v1/realtime")
	if speechPath && a.Speech != nil && !a.Speech.Mounted() {
		door.WriteError(w, speechcore.ErrNotMounted)
		return
	}
	door.WriteError(w, door.NewRefusal(http.StatusNotFound, "not_found", "no route "+r.Method+" "+p))
}
