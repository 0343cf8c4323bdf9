package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/voiced/voiced/meter"
	"github.com/voiced/voiced/session"
)

// newMetricsRegistry is the registry /metrics serves, with the Go and process collectors.
func newMetricsRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// The meter component: durable seconds heard and spoken (SQLite under --data-dir, or Postgres with
// --meter-dsn), quotas, GET /v1/usage, the shared ticket store and GET /metrics.
func init() {
	register("meter", orderStores, func() *component {
		var (
			dataDir, dsn, ticketStore string
			quota                     float64
			quotaStale                time.Duration
			m                         *meter.Meter
			closers                   []func() error
		)
		return &component{
			flags: func(fs *flag.FlagSet) {
				fs.StringVar(&dataDir, "data-dir", "data", "where the embedded SQLite meter database lives (meter.db)")
				fs.StringVar(&dsn, "meter-dsn", "", "a Postgres DSN (postgres://…) for the meter, when several nodes serve; overrides --data-dir")
				fs.Float64Var(&quota, "quota-seconds-per-day", 0, "seconds heard+spoken a principal may use per UTC day (0: no quota)")
				fs.DurationVar(&quotaStale, "quota-stale-after", 15*time.Minute, "while the meter store cannot be read, a principal whose balance was read this recently may still start conversations, counted from that balance (0: refuse every new one with 503 meter_store_unavailable)")
				fs.StringVar(&ticketStore, "ticket-store", "", "redis://host:port/db shares realtime tickets between nodes (default: in memory)")
			},
			validate: func(app *App) error {
				if quota < 0 {
					return fmt.Errorf("--quota-seconds-per-day %v must be >= 0", quota)
				}
				if quotaStale < 0 {
					return fmt.Errorf("--quota-stale-after %v must be >= 0", quotaStale)
				}
				if dsn != "" && !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://") {
					return fmt.Errorf("--meter-dsn must be a postgres:// URL")
				}
				if ticketStore != "" && !strings.HasPrefix(ticketStore, "redis://") && !strings.HasPrefix(ticketStore, "rediss://") {
					return fmt.Errorf("--ticket-store must be a redis:// URL")
				}
				return nil
			},
			start: func(ctx context.Context, app *App) error {
				openCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				var store *meter.SQL
				var err error
				if dsn != "" {
					store, err = meter.OpenPostgres(openCtx, dsn)
				} else {
					store, err = meter.OpenSQLite(openCtx, dataDir)
				}
				if err != nil {
					return fmt.Errorf("meter: %w", err)
				}
				closers = append(closers, store.Close)
				if quotaStale == 0 {
					quotaStale = -1 // meter.Config: negative never answers from a past read
				}
				m = meter.New(store, meter.Config{QuotaSecondsPerDay: quota, QuotaStaleAfter: quotaStale, Log: app.Log.With("component", "meter")})
				app.Meter = m
				app.ReadyCheck("meter_store_unavailable", m.Ping)
				app.Metrics.MustRegister(m.Collectors()...)
				if ticketStore != "" {
					rt, err := session.OpenRedisTickets(openCtx, ticketStore)
					if err != nil {
						return err
					}
					closers = append(closers, rt.Close)
					app.Tickets = rt
					app.ReadyCheck("ticket_store_unavailable", rt.Ping)
				}
				app.Handle("GET /v1/usage", m.UsageHandler())
				app.Handle("GET /metrics", promhttp.HandlerFor(app.Metrics, promhttp.HandlerOpts{}))
				return nil
			},
			stop: func(ctx context.Context) error {
				var first error
				if m != nil {
					first = m.Close(ctx)
				}
				for i := len(closers) - 1; i >= 0; i-- {
					if err := closers[i](); err != nil && first == nil {
						first = err
					}
				}
				return first
			},
		}
	})
}
