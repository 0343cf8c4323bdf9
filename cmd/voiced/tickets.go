package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/voiced/voiced/session"
)

// ticketConfig is the shared ticket store's flag: realtime tickets in Redis, so a ticket minted on
// one node opens a conversation on any other.
type ticketConfig struct {
	url string // --ticket-store; "" keeps tickets in memory
}

func (c *ticketConfig) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.url, "ticket-store", "", "redis://host:port/db shares realtime tickets between nodes (default: in memory)")
}

func (c *ticketConfig) validate() error {
	if c.url != "" && !strings.HasPrefix(c.url, "redis://") && !strings.HasPrefix(c.url, "rediss://") {
		return fmt.Errorf("--ticket-store must be a redis:// URL")
	}
	return nil
}

// start opens the shared store; nil when tickets stay in memory (the conversation keeps its own).
func (c *ticketConfig) start(ctx context.Context, app *App) (session.TicketStore, error) {
	if c.url == "" {
		return nil, nil
	}
	openCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rt, err := session.OpenRedisTickets(openCtx, c.url)
	if err != nil {
		return nil, err
	}
	app.ReadyCheck("ticket_store_unavailable", rt.Ping)
	app.OnShutdown(func(context.Context) error { return rt.Close() })
	return rt, nil
}
