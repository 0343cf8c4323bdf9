package main

import (
	"context"
	"flag"
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// parts are the server's parts by their flags, one file each, in the order start builds them.
type parts struct {
	auth         authConfig
	cluster      clusterConfig
	meter        meterConfig
	tickets      ticketConfig
	speech       speechConfig
	conversation conversationConfig
	webrtc       webrtcConfig
	debug        debugConfig
}

func (p *parts) flags(fs *flag.FlagSet) {
	p.auth.flags(fs)
	p.cluster.flags(fs)
	p.meter.flags(fs)
	p.tickets.flags(fs)
	p.speech.flags(fs)
	p.conversation.flags(fs)
	p.webrtc.flags(fs)
	p.debug.flags(fs)
}

// validate checks every part's flags before anything starts, so nothing starts half-configured.
// It returns the name of the part it refuses.
func (p *parts) validate(app *App) (part string, err error) {
	if err := p.auth.validate(app); err != nil {
		return "auth", err
	}
	if err := p.cluster.validate(p.tickets.url, app.serviceToken); err != nil {
		return "cluster", err
	}
	if err := p.meter.validate(); err != nil {
		return "meter", err
	}
	if err := p.tickets.validate(); err != nil {
		return "tickets", err
	}
	if err := p.speech.validate(app); err != nil {
		return "speech", err
	}
	if err := p.conversation.validate(); err != nil {
		return "conversation", err
	}
	if err := p.webrtc.validate(); err != nil {
		return "webrtc", err
	}
	if err := p.debug.validate(); err != nil {
		return "debug", err
	}
	return "", nil
}

// start builds the server before the listener binds, each part handed what the ones before it
// built: the cluster, the meter and the ticket store, then the speech service (loaded and warm)
// on the cluster and the meter, then the conversation on all of them, then WebRTC calls on the
// conversation. A part that started registers its stop (App.OnShutdown), so stops run in the
// reverse order after the sockets drained, or at once when a later part fails. It returns the
// name of the part that failed.
func (p *parts) start(ctx context.Context, app *App) (part string, err error) {
	if err := serveCore(app); err != nil {
		return "page", err
	}
	if err := p.debug.start(app); err != nil {
		return "debug", err
	}
	node, err := p.cluster.start(ctx, app)
	if err != nil {
		return "cluster", err
	}
	transcriptPeers, callPeers := clusterPeers(node)
	m, err := p.meter.start(ctx, app)
	if err != nil {
		return "meter", err
	}
	tickets, err := p.tickets.start(ctx, app)
	if err != nil {
		return "tickets", err
	}
	svc, err := p.speech.start(ctx, app, transcriptPeers, m)
	if err != nil {
		return "speech", err
	}
	conv, err := p.conversation.start(ctx, app, svc, m, tickets)
	if err != nil {
		return "conversation", err
	}
	if err := p.webrtc.start(app, conv, callPeers); err != nil {
		return "webrtc", err
	}
	return "", nil
}

// serveCore routes the server's own pages: /health and its probes and the browser page (no
// auth), and GET /metrics (service token).
func serveCore(app *App) error {
	app.HandlePublic("GET /health", http.HandlerFunc(app.serveHealth))
	app.HandlePublic("GET /health/live", http.HandlerFunc(serveLive))
	app.HandlePublic("GET /health/ready", http.HandlerFunc(app.serveReady))
	app.Handle("GET /metrics", promhttp.HandlerFor(app.Metrics, promhttp.HandlerOpts{}))
	return servePage(app)
}
