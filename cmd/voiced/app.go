package main

import (
	"context"
	"flag"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/speechcore"
)

// App is what the parts share: the logger, the mux and its route helpers, the origin policy, the
// drain registry, the metrics registry, the readiness checks and the shutdown hooks. What one part
// builds for another (the meter, the ticket store, the cluster's peers, the conversation server)
// is handed on explicitly in parts.start, not kept here.
type App struct {
	Version string
	Log     *slog.Logger

	// Speech is the speech service, for /health, the readiness probe and the fallback route (set
	// by the speech part; nil until it started).
	Speech *speechcore.Service
	// Origins is --allow-origin, parsed once: the one origin policy of every socket and browser route.
	Origins door.Origins
	// Sockets tracks hijacked WebSocket connections for graceful shutdown (same as Speech.Sockets).
	Sockets *door.Sockets
	// Voice reports the conversations' capacity for /health (set by the conversation part; nil
	// reports ok:false, busy:0, capacity:0).
	Voice door.VoiceReporter
	// listened are called with the listener's address once it is bound (OnListen).
	listened []func(addr net.Addr, tls bool)
	// Metrics is the Prometheus registry /metrics serves; the parts register their collectors on it.
	Metrics *prometheus.Registry

	// draining is set when shutdown begins: GET /health/ready answers 503 from then on.
	draining atomic.Bool
	// readyChecks are what GET /health/ready asks besides the speech core (ReadyCheck).
	readyChecks []readyCheck

	mux      *http.ServeMux
	auth     func(http.Handler) http.Handler // set by the auth part's validate
	flagSet  *flag.FlagSet
	fromEnv  map[string]string // flag name -> variable it was read from
	mu       sync.Mutex
	shutdown []func(context.Context) error

	// serviceToken is the service token (set by the auth part's validate; nil under
	// --insecure-no-auth): the cluster derives its secret from it when none is given.
	serviceToken []byte
}

// Handle puts a route that needs the service token (Authorization: Bearer <token>) on the mux.
func (a *App) Handle(pattern string, h http.Handler) {
	a.mux.Handle(pattern, requireAuth(a, h))
}

// HandleBrowser puts a public route that browser pages on other sites call (an SDK minting a
// ticket, posting an SDP offer): it answers the CORS preflight for the --allow-origin pages
// (OPTIONS on the same path) and marks their answers (door.CORS).
func (a *App) HandleBrowser(pattern string, h http.Handler) {
	method, path, _ := strings.Cut(pattern, " ")
	methods := method + ", OPTIONS"
	a.mux.Handle(pattern, door.CORS(a.Origins, methods, h))
	a.mux.Handle("OPTIONS "+path, door.CORS(a.Origins, methods, http.NotFoundHandler()))
}

// HandleFunc is Handle for a function.
func (a *App) HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	a.Handle(pattern, http.HandlerFunc(h))
}

// HandlePublic puts a route on the mux without the service-token check: public routes (/health,
// /) and routes that authenticate their own way (principal JWT, ticket).
func (a *App) HandlePublic(pattern string, h http.Handler) {
	a.mux.Handle(pattern, h)
}

// OnShutdown adds a hook run at shutdown after the listener closed and sockets drained; hooks
// run in reverse order of registration. The parts register their stops the same way.
func (a *App) OnShutdown(fn func(context.Context) error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.shutdown = append(a.shutdown, fn)
}

// FromCommandLine reports whether flag name was given on the command line (not from VOICED_*).
func (a *App) FromCommandLine(name string) bool {
	set := false
	a.flagSet.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set && a.fromEnv[name] == ""
}

func requireAuth(a *App, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a.auth == nil {
			// The auth part did not run: refuse rather than serve open.
			door.WriteError(w, errUnauthorized)
			return
		}
		a.auth(h).ServeHTTP(w, r)
	})
}

// readyCheck is one dependency the readiness probe asks: name is the refusal's name when it fails.
type readyCheck struct {
	name  string
	check func(context.Context) error
}

// ReadyCheck adds a dependency GET /health/ready asks (a store's ping); when check fails the
// probe answers 503 with name. Call it from a part's start.
func (a *App) ReadyCheck(name string, check func(context.Context) error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.readyChecks = append(a.readyChecks, readyCheck{name, check})
}

// OnListen adds a hook called once the listener is bound, with its address (a part that
// must tell others where this node is, when no address was configured).
func (a *App) OnListen(fn func(addr net.Addr, tls bool)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.listened = append(a.listened, fn)
}
