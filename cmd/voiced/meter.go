package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/voiced/voiced/meter"
)

// newMetricsRegistry is the registry /metrics serves, with the Go and process collectors.
func newMetricsRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// meterConfig is the meter's flags: durable seconds heard and spoken (SQLite under --data-dir, or
// Postgres with --meter-dsn), quotas and GET /v1/usage.
type meterConfig struct {
	dataDir, dsn string
	quota        float64
	quotaStale   time.Duration
}

func (c *meterConfig) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.dataDir, "data-dir", "data", "where the embedded SQLite meter database lives (meter.db)")
	fs.StringVar(&c.dsn, "meter-dsn", "", "a Postgres DSN (postgres://…) for the meter, when several nodes serve; overrides --data-dir")
	fs.Float64Var(&c.quota, "quota-seconds-per-day", 0, "seconds heard+spoken a principal may use per UTC day (0: no quota)")
	fs.DurationVar(&c.quotaStale, "quota-stale-after", 15*time.Minute, "while the meter store cannot be read, a principal whose balance was read this recently may still start conversations, counted from that balance (0: refuse every new one with 503 meter_store_unavailable)")
}

func (c *meterConfig) validate() error {
	if c.quota < 0 {
		return fmt.Errorf("--quota-seconds-per-day %v must be >= 0", c.quota)
	}
	if c.quotaStale < 0 {
		return fmt.Errorf("--quota-stale-after %v must be >= 0", c.quotaStale)
	}
	if c.dsn != "" && !strings.HasPrefix(c.dsn, "postgres://") && !strings.HasPrefix(c.dsn, "postgresql://") {
		return fmt.Errorf("--meter-dsn must be a postgres:// URL")
	}
	return nil
}

// start opens the store and the meter on it and serves GET /v1/usage; at shutdown the meter
// writes what is pending, then the store closes.
func (c *meterConfig) start(ctx context.Context, app *App, sp *speakers) (*meter.Meter, error) {
	openCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var store *meter.SQL
	var err error
	if c.dsn != "" {
		store, err = meter.OpenPostgres(openCtx, c.dsn)
	} else {
		store, err = meter.OpenSQLite(openCtx, c.dataDir)
	}
	if err != nil {
		return nil, fmt.Errorf("meter: %w", err)
	}
	stale := c.quotaStale
	if stale == 0 {
		stale = -1 // meter.Config: negative never answers from a past read
	}
	m := meter.New(store, meter.Config{QuotaSecondsPerDay: c.quota, QuotaStaleAfter: stale, Log: app.Log.With("component", "meter")})
	app.ReadyCheck("meter_store_unavailable", m.Ping)
	app.Metrics.MustRegister(m.Collectors()...)
	app.HandlePublic("GET /v1/usage", sp.usageAuth(app, m.UsageHandler()))             // speakers.go: a principal reads its own
	app.HandlePublic("GET /v1/usage/sessions", sp.usageAuth(app, m.SessionsHandler())) // issue 20: usage per session
	app.HandlePublic("GET /v1/usage/quota", sp.usageAuth(app, m.QuotaHandler()))       // issue 20: a principal's quota
	app.OnShutdown(func(ctx context.Context) error {
		err := m.Close(ctx)
		if cerr := store.Close(); err == nil {
			err = cerr
		}
		return err
	})
	return m, nil
}
