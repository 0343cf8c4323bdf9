package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"time"
)

// debugConfig is the profiling listener: net/http/pprof (CPU, heap, goroutine, mutex and block
// profiles) and the runtime's execution trace, on an address of its own that only the loopback
// reaches. It is off unless --debug-addr names one, and never served on the public listener:
// a profile names every function and a trace every goroutine, and a CPU profile costs a core's
// share for its duration.
type debugConfig struct {
	addr string
}

func (c *debugConfig) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.addr, "debug-addr", "", "serve /debug/pprof/ (profiles and the execution trace) on this loopback address (127.0.0.1:6060; port 0 picks one, logged as debugAddr=); empty: off. Never on the public listener")
}

// validate refuses an address the loopback does not own: the profiling listener is for an
// operator on the node (or a port-forward into its network namespace), never for the network.
func (c *debugConfig) validate() error {
	if c.addr == "" {
		return nil
	}
	host, _, err := net.SplitHostPort(c.addr)
	if err != nil {
		return fmt.Errorf("--debug-addr %q: %w", c.addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("--debug-addr %q: the profiling listener binds a loopback address only (127.0.0.1, ::1 or localhost)", c.addr)
	}
	return nil
}

// debugMux routes the profiles: the index, the named profiles through it, the command line,
// a CPU profile (?seconds=N), symbol lookup and the execution trace (?seconds=N).
func debugMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("POST /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	return mux
}

// start binds the profiling listener and serves it until shutdown. The server's goroutine is
// owned here: the stop waits for it.
func (c *debugConfig) start(app *App) error {
	if c.addr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		return fmt.Errorf("--debug-addr: %w", err)
	}
	// No WriteTimeout: a CPU profile or trace writes for as long as it was asked to run.
	srv := &http.Server{Handler: debugMux(), ReadHeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute}
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			app.Log.Error("profiling listener stopped", "error", err)
		}
	})
	app.Log.Info("profiling listener", "debugAddr", ln.Addr().String())
	app.OnShutdown(func(context.Context) error {
		err := srv.Close() // a profile in progress is cut: shutdown does not wait for it
		wg.Wait()
		return err
	})
	return nil
}
