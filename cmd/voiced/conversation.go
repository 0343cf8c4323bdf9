package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/voiced/voiced/bridge"
	"github.com/voiced/voiced/meter"
	"github.com/voiced/voiced/mind"
	"github.com/voiced/voiced/session"
	"github.com/voiced/voiced/speechcore"
)

// conversationConfig is the conversation's flags: principal JWTs, tickets, the OpenAI-shaped
// ephemeral keys and the realtime socket (session), with the mind it answers through (mind) and
// the speech engines wired to session's seams (bridge.Engines). This file parses flags and wires;
// what the parts do lives in their packages.
type conversationConfig struct {
	jwks, secretFile, issuer, audience, orgClaim, orgsClaim string
	mindKind, mindURL, mindModel, mindKeyFile               string
	mindTimeout, sessionLimit, idleTimeout, ticketTTL       time.Duration
	eventRate, ticketMintRate                               float64
	eventBurst, eventBytes, eventBytesBurst                 int
	conversationBytes, mindContextTokens                    int
	maxConversations, maxPerTenant, maxTicketsPerPrincipal  int
	speculate                                               bool
	mindTokenLimit                                          string
	mcp                                                     mcpFlags
	echoCancel                                              bool
	senses                                                  sensesFlags // senses.go
}

func (c *conversationConfig) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.jwks, "jwks", "", "principal JWT keys: a JWKS file or an http(s) URL (fetched at start, refreshed)")
	fs.StringVar(&c.secretFile, "jwt-secret-file", "", "principal JWT HS256 secret file (at least 32 bytes), instead of --jwks")
	fs.StringVar(&c.issuer, "jwt-issuer", "", "required iss of principal JWTs (unchecked when empty)")
	fs.StringVar(&c.audience, "jwt-audience", "", "required aud of principal JWTs (unchecked when empty)")
	fs.StringVar(&c.orgClaim, "jwt-org-claim", "org", "the JWT claim naming the principal's own org")
	fs.StringVar(&c.orgsClaim, "jwt-orgs-claim", "orgs", "the JWT claim listing the orgs X-Org-Id may name")
	fs.IntVar(&c.maxConversations, "max-conversations", session.DefaultMaxConversations, "concurrent realtime conversations; beyond it 429 + Retry-After at the handshake")
	fs.IntVar(&c.maxPerTenant, "max-per-tenant", session.DefaultMaxPerTenant, "concurrent conversations per org (per subject without an org)")
	fs.DurationVar(&c.sessionLimit, "session-limit", session.DefaultSessionLimit, "audio a conversation may carry before a clean close (session_expired, 1001)")
	fs.DurationVar(&c.idleTimeout, "idle-timeout", session.DefaultIdleTimeout, "a conversation that sends nothing for this long is closed")
	fs.Float64Var(&c.eventRate, "event-rate", session.DefaultEventRate, "client events a realtime connection may send per second (input_audio_buffer.append not counted); over it rate_limit_exceeded, past twice the allowance close 1008; 0 = no limit")
	fs.IntVar(&c.eventBurst, "event-burst", session.DefaultEventBurst, "client events a realtime connection may send at once (the rate limit's bucket)")
	fs.IntVar(&c.eventBytes, "event-bytes", session.DefaultEventBytes, "bytes a principal's realtime client events other than input_audio_buffer.append may carry per second, charged before they are decoded; over it rate_limit_exceeded, past twice the allowance close 1008; 0 = no limit")
	fs.IntVar(&c.eventBytesBurst, "event-bytes-burst", session.DefaultEventBytesBurst, "bytes those events may carry at once (the byte budget's bucket; at least 1 MiB): a bigger event is never accepted")
	fs.IntVar(&c.conversationBytes, "max-conversation-bytes", session.DefaultConversationBytes, "bytes one conversation's items may keep (ids, text, transcripts, arguments, image URIs, audio handed over in conversation.item.create); past it conversation_too_large; at least 1 MiB")
	fs.DurationVar(&c.ticketTTL, "ticket-ttl", session.DefaultTicketTTL, "default lifetime of a ticket (a request may ask 5s..10m)")
	fs.IntVar(&c.maxTicketsPerPrincipal, "max-tickets-per-principal", session.DefaultMaxTicketsPerPrincipal, "unused, unexpired tickets one principal (JWT sub) may hold; a mint past it: 429 too_many_tickets")
	fs.Float64Var(&c.ticketMintRate, "ticket-mint-rate", session.DefaultTicketMintRate, "tickets a second one principal may mint, sustained (bursts up to --max-tickets-per-principal); over it 429 ticket_rate_exceeded; 0 = no limit")
	fs.StringVar(&c.mindKind, "mind", "", "echo or openai (default: openai when --mind-url is set, else echo)")
	fs.StringVar(&c.mindURL, "mind-url", "", "an OpenAI-compatible API base, e.g. http://127.0.0.1:11434/v1 (POST …/chat/completions, stream:true)")
	fs.StringVar(&c.mindModel, "mind-model", "", "the model name sent to --mind-url")
	fs.StringVar(&c.mindKeyFile, "mind-key-file", "", "file holding the API key for --mind-url (sent as Authorization: Bearer)")
	fs.BoolVar(&c.echoCancel, "echo-cancellation", true, "cancel the reply audio the server sent from the microphone of sessions that do not say (voiced.echo_cancellation): on for WebSocket sessions, off for WebRTC calls (the browser cancels its own echo)")
	fs.BoolVar(&c.speculate, "speculate", true, "semantic_vad: ask the mind on the partial transcript once it reads finished, before the turn ends, and use the answer when the final transcript matches (a mind that bills per call pays for the discarded ones; server_vad never speculates)")
	fs.IntVar(&c.mindContextTokens, "mind-context-tokens", session.DefaultMindContextTokens, "the --mind-model's room for the conversation after its instructions and tools, in estimated tokens (4 bytes of text, 85/765 an image); a longer history is shown from a later turn (session.truncation), the client keeps every item")
	c.mcp.flags(fs)
	fs.StringVar(&c.mindTokenLimit, "mind-token-limit-field", "max_tokens", "the request field that carries a response's max_output_tokens to --mind-url: max_tokens, max_completion_tokens (OpenAI's reasoning models refuse max_tokens) or both")
	c.senses.flags(fs)
	fs.DurationVar(&c.mindTimeout, "mind-timeout", 60*time.Second, "the longest the mind may be silent: before its first token and between tokens (speaking does not count)")
}

func (c *conversationConfig) validate() error {
	if c.jwks != "" && c.secretFile != "" {
		return errors.New("--jwks and --jwt-secret-file both given: choose one")
	}
	if c.maxConversations <= 0 || c.maxPerTenant <= 0 {
		return errors.New("--max-conversations and --max-per-tenant must be positive")
	}
	if c.eventRate < 0 || (c.eventRate > 0 && c.eventBurst < 1) {
		return errors.New("--event-rate must be >= 0 (0 = no limit) and --event-burst >= 1")
	}
	if c.eventBytes < 0 || (c.eventBytes > 0 && c.eventBytesBurst < session.MinEventBytesBurst) {
		return fmt.Errorf("--event-bytes must be >= 0 (0 = no limit) and --event-bytes-burst >= %d", session.MinEventBytesBurst)
	}
	if c.mindContextTokens < 100 {
		return fmt.Errorf("--mind-context-tokens %d is under 100", c.mindContextTokens)
	}
	if c.conversationBytes < session.MinConversationBytes {
		return fmt.Errorf("--max-conversation-bytes %d is under %d", c.conversationBytes, session.MinConversationBytes)
	}
	if c.ticketTTL < session.MinTicketTTL || c.ticketTTL > session.MaxTicketTTL {
		return fmt.Errorf("--ticket-ttl %s outside %s..%s", c.ticketTTL, session.MinTicketTTL, session.MaxTicketTTL)
	}
	if c.maxTicketsPerPrincipal <= 0 || c.ticketMintRate < 0 {
		return errors.New("--max-tickets-per-principal must be positive and --ticket-mint-rate >= 0 (0 = no limit)")
	}
	switch c.mindKind {
	case "", "echo", "openai":
	default:
		return fmt.Errorf("--mind %q: echo or openai", c.mindKind)
	}
	if c.mindKind == "openai" && c.mindURL == "" {
		return errors.New("--mind openai needs --mind-url and --mind-model")
	}
	return nil
}

// start serves the realtime conversation on svc's engines (bridge.Engines), metered by m (nil:
// unmetered), its tickets in tickets (nil: in memory); at shutdown it waits for the
// conversations still open.
func (c *conversationConfig) start(ctx context.Context, app *App, svc *speechcore.Service, m *meter.Meter, tickets session.TicketStore) (*session.Server, error) {
	mnd, err := newMind(c.mindKind, c.mindURL, c.mindModel, c.mindKeyFile, c.mindTokenLimit, c.mindTimeout)
	if err != nil {
		return nil, err
	}
	mcpClient, err := c.mcp.client()
	if err != nil {
		return nil, err
	}
	verifier, stopKeys, err := c.verifier(ctx, app)
	if err != nil {
		return nil, err
	}
	cfg := session.Config{
		Verifier: verifier, Tickets: tickets, Origins: app.Origins,
		MaxConversations: c.maxConversations, MaxPerTenant: c.maxPerTenant, TicketTTL: c.ticketTTL,
		SessionLimit: c.sessionLimit, IdleTimeout: c.idleTimeout, Speculate: c.speculate, EchoCancel: c.echoCancel, EventRate: c.eventRate, EventBurst: c.eventBurst,
		EventBytes: c.eventBytes, EventBytesBurst: c.eventBytesBurst, ConversationBytes: c.conversationBytes, MindContextTokens: c.mindContextTokens, Log: app.Log.With("component", "conversation"),
		MaxTicketsPerPrincipal: c.maxTicketsPerPrincipal, TicketMintRate: c.ticketMintRate,
		Engines: bridge.Engines(svc, mnd, m), MCP: mcpClient, Senses: c.senses.config(),
	}
	if c.eventRate == 0 {
		cfg.EventRate = -1 // the flag's 0 is "no limit"; the Config's 0 is the default
	}
	if c.ticketMintRate == 0 {
		cfg.TicketMintRate = -1 // likewise
	}
	if c.eventBytes == 0 {
		cfg.EventBytes = -1
	}
	if app.Sockets != nil {
		cfg.Sockets = app.Sockets
	}
	srv, err := session.New(cfg)
	if err != nil {
		stopKeys()
		return nil, err
	}
	// The routes a browser SDK calls from another site answer CORS for the --allow-origin pages.
	app.HandleBrowser("POST /v1/voice/session", http.HandlerFunc(srv.ServeVoiceSession))
	app.HandleBrowser("POST /v1/realtime/sessions", http.HandlerFunc(srv.ServeBetaSessions))
	app.HandleBrowser("POST /v1/realtime/client_secrets", http.HandlerFunc(srv.ServeClientSecrets))
	app.HandleBrowser("POST /v1/realtime/transcription_sessions", http.HandlerFunc(srv.ServeTranscriptionSessions))
	app.HandlePublic("GET /v1/voice", http.HandlerFunc(srv.ServeVoice))
	app.HandlePublic("GET /v1/realtime", http.HandlerFunc(srv.ServeRealtime))
	app.HandleFunc("GET /v1/voice/health", srv.ServeHealth)
	app.Metrics.MustRegister(srv.Collectors()...)
	app.Voice = srv
	app.OnShutdown(func(ctx context.Context) error {
		defer stopKeys()
		return waitConversations(ctx, srv)
	})
	return srv, nil
}

// verifier is the principal JWT verifier the flags ask for (nil, with a warning, when none), and
// what ends its JWKS refresh.
func (c *conversationConfig) verifier(ctx context.Context, app *App) (*session.Verifier, context.CancelFunc, error) {
	if c.jwks == "" && c.secretFile == "" {
		app.Log.Warn("no --jwks or --jwt-secret-file: principal JWTs cannot be verified, so no ticket can be minted and the realtime socket refuses every caller")
		return nil, func() {}, nil
	}
	vc := session.VerifierConfig{JWKS: c.jwks, Issuer: c.issuer, Audience: c.audience, OrgClaim: c.orgClaim, OrgsClaim: c.orgsClaim}
	if c.secretFile != "" {
		var err error
		if vc.Secret, err = session.ReadSecretFile(c.secretFile); err != nil {
			return nil, nil, err
		}
	}
	// The JWKS cache refreshes for the server's life, not the start's.
	keysCtx, stopKeys := context.WithCancel(context.WithoutCancel(ctx))
	v, err := session.NewVerifier(keysCtx, vc)
	if err != nil {
		stopKeys()
		return nil, nil, err
	}
	return v, stopKeys, nil
}

// waitConversations waits, bounded by ctx, for the conversations still open at shutdown.
func waitConversations(ctx context.Context, srv *session.Server) error {
	done := make(chan struct{})
	go func() { srv.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("conversations still open at shutdown: %w", ctx.Err())
	}
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func newMind(kind, url, model, keyFile, tokenLimit string, timeout time.Duration) (mind.Mind, error) {
	if kind == "echo" || (kind == "" && url == "") {
		return mind.Echo{}, nil
	}
	var key string
	if keyFile != "" {
		b, err := os.ReadFile(keyFile)
		if err != nil {
			return nil, fmt.Errorf("read --mind-key-file: %w", err)
		}
		key = strings.TrimSpace(string(b))
	}
	return mind.NewOpenAI(mind.OpenAIConfig{URL: url, Model: model, Key: key, Timeout: timeout, TokenLimit: mind.TokenLimitField(tokenLimit)})
}
