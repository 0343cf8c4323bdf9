package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/mcptool"
	"github.com/voiced/voiced/mind"
	"github.com/voiced/voiced/wire"
)

// Defaults of Config.
const (
	// DefaultMaxConversations: four at once. The reference deployment measured four as what one
	// transcriber keeps up with before its backlog grows without bound (reference/004); a bigger
	// machine raises it with --max-conversations.
	DefaultMaxConversations = 4
	// DefaultMaxPerTenant: two per org (or per subject when the token names no org).
	DefaultMaxPerTenant = 2
	// DefaultSessionLimit is the audio a conversation may carry before it is closed: OpenAI's 60
	// minutes, so an agent built for OpenAI's limits (LiveKit, a phone agent) is not cut early.
	DefaultSessionLimit = 60 * time.Minute
	// DefaultIdleTimeout closes a conversation that sent nothing for this long.
	DefaultIdleTimeout = 120 * time.Second
	// ReadLimit bounds one client event: an append may carry 15 MiB of audio. A bigger event is
	// read, discarded and answered with an error event; the session stays open.
	ReadLimit = 16 << 20
	// HardReadLimit closes the socket (1009): past it a frame is not even read through.
	HardReadLimit = 64 << 20
)

// Config is one Server's configuration; zero values take the defaults above.
type Config struct {
	Verifier *Verifier   // nil: principal JWTs are refused (ErrNoVerifier); tickets still work
	Tickets  TicketStore // nil: an in-memory store
	// Origins is the origin policy (--allow-origin, parsed once; door.Origins): a page served by
	// this host is always allowed.
	Origins          door.Origins
	MaxConversations int
	MaxPerTenant     int
	TicketTTL        time.Duration
	SessionLimit     time.Duration // seconds of audio (heard + spoken) before a clean close
	IdleTimeout      time.Duration
	// Speculate: under semantic_vad, ask the mind on the partial transcript as soon as the
	// detector judges it finished, before the turn ends, and release that answer when the final
	// transcript matches (speculate.go). A mind that bills per call pays for the discarded ones.
	// False (the zero value): the mind is asked once the turn has ended. cmd/voiced's --speculate
	// turns it on by default.
	Speculate bool
	// EchoCancel: a session that does not say (voiced.echo_cancellation null) gets the echo
	// canceller by its transport (room.go: on over a WebSocket, off on a WebRTC call). False (the
	// zero value): only a session that asks gets it. cmd/voiced's --echo-cancellation turns it on
	// by default.
	EchoCancel bool
	// EventRate and EventBurst limit the client events of one connection (ratelimit.go;
	// input_audio_buffer.append is not counted): EventRate a second sustained, EventBurst at
	// once. Zero takes DefaultEventRate / DefaultEventBurst; a negative EventRate turns it off.
	EventRate  float64
	EventBurst int
	// EventBytes and EventBytesBurst bound the bytes of a principal's client events other than
	// appends, before they are decoded (ratelimit.go): EventBytes a second sustained,
	// EventBytesBurst at once (at least MinEventBytesBurst). Zero takes DefaultEventBytes /
	// DefaultEventBytesBurst; a negative EventBytes turns it off.
	EventBytes      int
	EventBytesBurst int
	// ConversationBytes bounds what one conversation's items keep (items.go); zero takes
	// DefaultConversationBytes.
	ConversationBytes int
	// MindContextTokens is the mind model's budget for the conversation it is shown (after its
	// instructions and tools), in estimated tokens (truncation.go); zero takes
	// DefaultMindContextTokens.
	MindContextTokens int
	// MaxTicketsPerPrincipal caps the unused, unexpired tickets one principal (JWT subject) holds
	// (the mint past it: 429 too_many_tickets); TicketMintRate the mints a second it may sustain,
	// in bursts of MaxTicketsPerPrincipal (past it: 429 ticket_rate_exceeded). Zero takes
	// DefaultMaxTicketsPerPrincipal / DefaultTicketMintRate; negative turns each off (mint.go).
	MaxTicketsPerPrincipal int
	TicketMintRate         float64
	// Senses is what the mind sees and hears beside the words: video frames' bounds, and
	// whether it hears the user's audio (an omni mind; senses.go).
	Senses SensesConfig

	// Sockets, when set, tracks the hijacked sockets for graceful shutdown (door.Sockets):
	// a conversation registers before the upgrade, finishes the reply in flight when draining
	// starts, then closes with 1001; its context ends when the grace period does.
	Sockets SocketTracker

	// MCP serves tools of type "mcp" (nil, or no host allowed: they are refused by name,
	// mcp_tools_unsupported).
	MCP *mcptool.Client

	Engines Engines
	Log     *slog.Logger
	Now     func() time.Time
}

// SocketTracker is what graceful shutdown needs of a socket (door.Sockets satisfies it).
type SocketTracker interface {
	Enter(parent context.Context) (ctx context.Context, leave func(), err error)
	Draining() <-chan struct{}
}

// Server serves the realtime conversation: tickets, the handshake, the conversations.
type Server struct {
	cfg Config
	log *slog.Logger

	metrics *metrics // metrics.go
	// eventBytes is each principal's budget of client event bytes (Config.EventBytes)
	eventBytes *principalBuckets

	gate  *door.Gate        // --max-conversations, and --max-per-tenant per tenant
	mints *principalBuckets // --ticket-mint-rate per principal, in mints
	// sideband serves /v1/realtime?call_id= (set once by the WebRTC component)
	sideband atomic.Pointer[http.Handler]
	wg       sync.WaitGroup // conversations running
}

// New validates cfg, fills the defaults and returns the server.
func New(cfg Config) (*Server, error) {
	if cfg.MaxConversations == 0 {
		cfg.MaxConversations = DefaultMaxConversations
	}
	if cfg.MaxPerTenant == 0 {
		cfg.MaxPerTenant = DefaultMaxPerTenant
	}
	if cfg.MaxConversations < 0 || cfg.MaxPerTenant < 0 {
		return nil, errors.New("session: conversation limits must be positive")
	}
	if err := cfg.Senses.fill(); err != nil {
		return nil, err
	}
	if cfg.TicketTTL == 0 {
		cfg.TicketTTL = DefaultTicketTTL
	}
	if cfg.TicketTTL < MinTicketTTL || cfg.TicketTTL > MaxTicketTTL {
		return nil, fmt.Errorf("session: ticket TTL %s outside %s..%s", cfg.TicketTTL, MinTicketTTL, MaxTicketTTL)
	}
	if cfg.SessionLimit == 0 {
		cfg.SessionLimit = DefaultSessionLimit
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.EventRate == 0 {
		cfg.EventRate = DefaultEventRate
	}
	if cfg.EventBurst == 0 {
		cfg.EventBurst = DefaultEventBurst
	}
	if cfg.EventBytes == 0 {
		cfg.EventBytes = DefaultEventBytes
	}
	if cfg.EventBytesBurst == 0 {
		cfg.EventBytesBurst = DefaultEventBytesBurst
	}
	if cfg.EventBytes > 0 && cfg.EventBytesBurst < MinEventBytesBurst {
		return nil, fmt.Errorf("session: the event bytes burst %d is under %d", cfg.EventBytesBurst, MinEventBytesBurst)
	}
	if cfg.ConversationBytes == 0 {
		cfg.ConversationBytes = DefaultConversationBytes
	}
	if cfg.ConversationBytes < MinConversationBytes {
		return nil, fmt.Errorf("session: conversation bytes %d under %d", cfg.ConversationBytes, MinConversationBytes)
	}
	if cfg.EventRate > 0 && cfg.EventBurst < 1 {
		return nil, errors.New("session: the event burst must be at least 1")
	}
	if cfg.Tickets == nil {
		cfg.Tickets = NewMemoryTickets(cfg.Now)
	}
	if cfg.MaxTicketsPerPrincipal == 0 {
		cfg.MaxTicketsPerPrincipal = DefaultMaxTicketsPerPrincipal
	}
	if cfg.TicketMintRate == 0 {
		cfg.TicketMintRate = DefaultTicketMintRate
	}
	burst := cfg.MaxTicketsPerPrincipal
	if burst < 1 {
		burst = DefaultMaxTicketsPerPrincipal
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Engines.Mind == nil {
		cfg.Engines.Mind = mind.Echo{}
	}
	gate := door.NewGate(cfg.MaxConversations, ErrCapacity).PerKey(cfg.MaxPerTenant, ErrTenantCapacity)
	return &Server{cfg: cfg, log: cfg.Log, gate: gate, mints: newPrincipalBuckets(cfg.TicketMintRate, float64(burst)), metrics: newMetrics(),
		eventBytes: newPrincipalBuckets(float64(cfg.EventBytes), float64(cfg.EventBytesBurst))}, nil
}

// Wait blocks until every conversation has ended (after the listener closed).
func (s *Server) Wait() { s.wg.Wait() }

// VoiceHealth reports capacity for /health and /v1/voice/health.
func (s *Server) VoiceHealth() door.VoiceHealth {
	return door.VoiceHealth{OK: s.cfg.Engines.ready() == nil, Busy: s.gate.Open(), Capacity: s.gate.Cap()}
}

// ServeHealth is GET /v1/voice/health: {ok, busy, capacity}.
func (s *Server) ServeHealth(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(s.VoiceHealth())
}

// ---- tickets over HTTP ----

// principal verifies the request's bearer JWT (X-Org-Id honoured by the org rule).
func (s *Server) principal(r *http.Request) (Principal, error) {
	tok := bearer(r)
	if tok == "" {
		return Principal{}, ErrNoCredential
	}
	if s.cfg.Verifier == nil {
		return Principal{}, ErrNoVerifier
	}
	return s.cfg.Verifier.Verify(tok, r.Header.Get("X-Org-Id"))
}

// mint stores a ticket for p with the session config carried (re-encoded by ticketSession, may
// be nil), within p's ticket cap.
func (s *Server) mint(ctx context.Context, p Principal, session json.RawMessage, model string, ttl time.Duration) (string, time.Time, error) {
	t := NewTicket()
	if err := s.cfg.Tickets.Put(ctx, t, Grant{Principal: p, Session: session, Model: model}, ttl, s.cfg.MaxTicketsPerPrincipal); err != nil {
		return "", time.Time{}, fmt.Errorf("store ticket: %w", err)
	}
	return t, s.cfg.Now().Add(ttl), nil
}

func (s *Server) ttl(seconds float64) (time.Duration, error) {
	if seconds == 0 {
		return s.cfg.TicketTTL, nil
	}
	d := time.Duration(seconds * float64(time.Second))
	if d < MinTicketTTL || d > MaxTicketTTL {
		return 0, door.Refuse(ErrTicketTTL, fmt.Sprintf("a ticket may live %d to %d seconds; %g was asked",
			int(MinTicketTTL/time.Second), int(MaxTicketTTL/time.Second), seconds))
	}
	return d, nil
}

// applySessionObject applies a bare session object (a ticket's) as a session.update.
func applySessionObject(sess *wire.Session, raw json.RawMessage, d wire.Dialect) error {
	u, err := wire.DecodeSession(raw, d)
	if err != nil {
		return err
	}
	return sess.ApplyOpen(u) // a fresh session: a GA type "transcription" makes it one
}

// ServeVoiceSession is POST /v1/voice/session (reference/004): a principal JWT in, a ticket out.
// Body (optional): {"expires_in": seconds, "session": {…session.update's session…}}.
func (s *Server) ServeVoiceSession(w http.ResponseWriter, r *http.Request) {
	p, err := s.minter(r)
	if err != nil {
		s.writeMintError(w, err)
		return
	}
	var body struct {
		ExpiresIn float64         `json:"expires_in"`
		Session   json.RawMessage `json:"session"`
	}
	if err := readMintBody(r, &body); err != nil {
		s.writeMintError(w, err)
		return
	}
	ttl, err := s.ttl(body.ExpiresIn)
	var kept json.RawMessage
	if err == nil {
		_, kept, err = ticketSession(body.Session, wire.GA, "")
	}
	if err != nil {
		s.writeMintError(w, err)
		return
	}
	ticket, _, err := s.mint(r.Context(), p, kept, "", ttl)
	if err != nil {
		s.writeMintError(w, err)
		return
	}
	writeJSON(w, map[string]any{"ticket": ticket, "expires_in": int(ttl / time.Second),
		"rate": 24000, "format": "pcm16", "channels": 1})
}

// ServeBetaSessions is POST /v1/realtime/sessions (beta): the body is a beta session object;
// the answer is the session with client_secret{value, expires_at}.
func (s *Server) ServeBetaSessions(w http.ResponseWriter, r *http.Request) {
	p, err := s.minter(r)
	if err != nil {
		s.writeMintError(w, err)
		return
	}
	var raw json.RawMessage
	if err := readMintBody(r, &raw); err != nil {
		s.writeMintError(w, err)
		return
	}
	var meta struct {
		Model        string `json:"model"`
		ClientSecret struct {
			ExpiresAfter struct {
				Seconds float64 `json:"seconds"`
			} `json:"expires_after"`
		} `json:"client_secret"`
	}
	if len(raw) > 0 {
		json.Unmarshal(raw, &meta)
	}
	ttl, err := s.ttl(meta.ClientSecret.ExpiresAfter.Seconds)
	var sess wire.Session
	var kept json.RawMessage
	if err == nil {
		sess, kept, err = ticketSession(raw, wire.Beta, meta.Model)
	}
	if err != nil {
		s.writeMintError(w, err)
		return
	}
	ticket, expires, err := s.mint(r.Context(), p, kept, meta.Model, ttl)
	if err != nil {
		s.writeMintError(w, err)
		return
	}
	out, err := withFields(wire.SessionJSON(&sess, wire.Beta), map[string]any{
		"client_secret": map[string]any{"value": ticket, "expires_at": expires.Unix()}})
	if err != nil {
		s.writeMintError(w, err)
		return
	}
	writeJSON(w, out)
}

// ServeClientSecrets is POST /v1/realtime/client_secrets (GA): body
// {expires_after:{anchor, seconds}, session:{type:"realtime", …}}; answer {value, expires_at, session}.
func (s *Server) ServeClientSecrets(w http.ResponseWriter, r *http.Request) {
	p, err := s.minter(r)
	if err != nil {
		s.writeMintError(w, err)
		return
	}
	var body struct {
		ExpiresAfter struct {
			Seconds float64 `json:"seconds"`
		} `json:"expires_after"`
		Session json.RawMessage `json:"session"`
	}
	if err := readMintBody(r, &body); err != nil {
		s.writeMintError(w, err)
		return
	}
	var meta struct {
		Model string `json:"model"`
	}
	if len(body.Session) > 0 {
		json.Unmarshal(body.Session, &meta)
	}
	ttl, err := s.ttl(body.ExpiresAfter.Seconds)
	var sess wire.Session
	var kept json.RawMessage
	if err == nil {
		sess, kept, err = ticketSession(body.Session, wire.GA, meta.Model)
	}
	if err != nil {
		s.writeMintError(w, err)
		return
	}
	ticket, expires, err := s.mint(r.Context(), p, kept, meta.Model, ttl)
	if err != nil {
		s.writeMintError(w, err)
		return
	}
	sess.ExpiresAt = expires.Unix()
	writeJSON(w, map[string]any{"value": ticket, "expires_at": expires.Unix(), "session": wire.SessionJSON(&sess, wire.GA)})
}

// withFields renders v as a JSON object and adds extra members.
func withFields(v any, extra map[string]any) (map[string]json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	out := map[string]json.RawMessage{}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	for k, x := range extra {
		xb, _ := json.Marshal(x)
		out[k] = xb
	}
	return out, nil
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(v)
}

// writeRefusal answers err before an upgrade, in one body both kinds of client read: voiced's
// {"type":"error","name","message"} (SPEC §9) with OpenAI's {"error":{message,type,code,param}}
// beside it (code = name), which the OpenAI SDKs parse from the ephemeral-key routes.
func writeRefusal(w http.ResponseWriter, err error) {
	ref := door.AsRefusal(err)
	door.WriteHeaders(w, ref)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(ref.Status())
	json.NewEncoder(w).Encode(struct {
		door.ErrorFrame
		Error door.OpenAIError `json:"error"`
	}{door.Frame(ref), door.OpenAIErrorOf(ref, "")})
}

// ---- the socket handshake ----

// ServeVoice is WS /v1/voice?ticket=.
func (s *Server) ServeVoice(w http.ResponseWriter, r *http.Request) { s.serveSocket(w, r, "voice") }

// ServeRealtime is WS /v1/realtime?model=.
// With ?call_id= it is a sideband socket on a running WebRTC call, served by SetSideband's handler.
func (s *Server) ServeRealtime(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("call_id") != "" {
		if h := s.sideband.Load(); h != nil {
			(*h).ServeHTTP(w, r)
			return
		}
	}
	s.serveSocket(w, r, "realtime")
}

// SetSideband serves WS /v1/realtime?call_id=… (a server's control socket on a running call) with
// h; without it such a request is an ordinary conversation handshake.
func (s *Server) SetSideband(h http.Handler) { s.sideband.Store(&h) }

const apiKeyProtocol = "openai-insecure-api-key."

// Kit is the door kit this server's sockets open with: its origin policy, its shutdown registry
// (Config.Sockets) and its refusals (counted; both error bodies). A sideband socket on a WebRTC
// call opens with it too.
func (s *Server) Kit() door.Kit {
	kit := door.Kit{Origins: s.cfg.Origins, Refuse: s.refuse}
	if s.cfg.Sockets != nil {
		kit.Sockets = s.cfg.Sockets
	}
	return kit
}

func (s *Server) serveSocket(w http.ResponseWriter, r *http.Request, doorName string) {
	var grant Grant
	admit := func() (release func(), err error) { // the kit has checked the origin
		grant, release, err = s.admit(r, s.cfg.Tickets.Take)
		return release, err
	}
	// Counted before the upgrade, so a Wait that starts once the client has its socket waits for it.
	s.wg.Add(1)
	defer s.wg.Done()
	ctx, conn, done, ok := s.Kit().Upgrade(w, r, admit, &websocket.AcceptOptions{Subprotocols: []string{"realtime"}})
	if !ok {
		return // refused by name, or the upgrade failed (Accept answered)
	}
	defer done()
	conn.SetReadLimit(HardReadLimit)
	model := r.URL.Query().Get("model")
	if model == "" {
		model = grant.Model
	}
	open := s.metrics.open.WithLabelValues(doorName)
	open.Inc()
	defer open.Dec()
	s.Converse(ctx, &wsTransport{conn: conn}, grant, wire.DialectFromHandshake(r.Header), model)
}

// Admit runs a conversation's admission on a request, the checks every transport shares (the
// WebSocket handshake, a WebRTC call's offer), in order: the origin, ?model='s length, the
// engines' readiness, the global cap (before the credential is spent), the credential (a ticket
// is taken once, a JWT verified), the quota, and a slot under the global and the tenant cap. Each
// refusal is a door.Refusal with its reason; release gives the slot back (once).
func (s *Server) Admit(r *http.Request) (grant Grant, release func(), err error) {
	if err := s.cfg.Origins.Check(r); err != nil {
		return Grant{}, nil, err
	}
	return s.admit(r, s.cfg.Tickets.Take)
}

// AdmitCall is Admit in two steps, for a WebRTC call whose offer is read after its credential:
// every check runs now, but a ticket is only looked at (TicketStore.Peek), not spent, so a body
// refused afterwards leaves it usable. redeem spends it once the offer is answered (atomic: a
// ticket taken meanwhile is ticket_invalid; the caller then releases the slot and refuses); a JWT
// has nothing to spend. release gives the slot back, as Admit's.
func (s *Server) AdmitCall(r *http.Request) (grant Grant, release func(), redeem func(context.Context) error, err error) {
	var ticket string
	look := func(ctx context.Context, t string) (Grant, error) {
		ticket = t
		return s.cfg.Tickets.Peek(ctx, t)
	}
	if err := s.cfg.Origins.Check(r); err != nil {
		return Grant{}, nil, nil, err
	}
	grant, release, err = s.admit(r, look)
	if err != nil {
		return Grant{}, nil, nil, err
	}
	redeem = func(ctx context.Context) error {
		if ticket == "" {
			return nil
		}
		if _, err := s.cfg.Tickets.Take(ctx, ticket); err != nil {
			return withReason(err, door.ReasonAuth)
		}
		return nil
	}
	return grant, release, redeem, nil
}

// admit is Admit after the origin (checked by its caller: Admit, AdmitCall, or the door kit),
// with look finding a ticket's grant (Take, or Peek for AdmitCall).
func (s *Server) admit(r *http.Request, look func(context.Context, string) (Grant, error)) (grant Grant, release func(), err error) {
	if model := r.URL.Query().Get("model"); len(model) > wire.MaxModelBytes { // echoed for the session's life
		return Grant{}, nil, door.Refuse(ErrBadRequest, wire.ErrStringTooLong("model", "", wire.MaxModelBytes, len(model)).Message)
	}
	if err := s.cfg.Engines.ready(); err != nil {
		return Grant{}, nil, withReason(err, door.ReasonNotWarm)
	}
	if s.gate.Full() {
		return Grant{}, nil, ErrCapacity
	}
	grant, err = s.authenticate(r, look)
	if err != nil {
		return Grant{}, nil, withReason(err, door.ReasonAuth)
	}
	if grant, err = withIntent(grant, r); err != nil { // transcription.go
		return Grant{}, nil, err
	}
	if admit := s.cfg.Engines.Admit; admit != nil {
		if err := admit(r.Context(), grant.Principal); err != nil {
			return Grant{}, nil, withReason(err, door.ReasonQuota)
		}
	}
	release, err = s.gate.Acquire(tenant(grant.Principal))
	if err != nil {
		return Grant{}, nil, err
	}
	return grant, release, nil
}

// withReason gives a refusal that names no reason of its own the reason of the step that refused
// (an engine's readiness, a ticket store's failure); anything else becomes internal_error there.
func withReason(err error, reason string) error {
	r := door.AsRefusal(err)
	if r.Reason() == "" {
		return r.WithReason(reason)
	}
	return r
}

// authenticate finds the credential (query ticket, subprotocol key, bearer) and checks it: a
// ticket's grant is found by look (Take: taken once); a JWT is verified. ?ticket= takes a one-use
// ticket only: a principal JWT is reusable until it expires, and a URL lands in proxy and access
// logs and browser history, so one found there is refused without being looked at. The
// subprotocol (a header, the browser's only way) and Authorization take either.
func (s *Server) authenticate(r *http.Request, look func(context.Context, string) (Grant, error)) (Grant, error) {
	cred := r.URL.Query().Get("ticket")
	if cred != "" && !LooksLikeTicket(cred) {
		return Grant{}, ErrCredentialInQuery
	}
	if cred == "" {
		for _, v := range r.Header.Values("Sec-WebSocket-Protocol") {
			for _, p := range strings.Split(v, ",") {
				p = strings.TrimSpace(p)
				if k, ok := strings.CutPrefix(p, apiKeyProtocol); ok && k != "" && k != "null" {
					cred = k
				}
			}
		}
	}
	if cred == "" {
		cred = bearer(r)
	}
	switch {
	case cred == "":
		return Grant{}, ErrNoCredential
	case LooksLikeTicket(cred):
		return look(r.Context(), cred)
	default:
		if s.cfg.Verifier == nil {
			return Grant{}, ErrNoVerifier
		}
		p, err := s.cfg.Verifier.Verify(cred, r.Header.Get("X-Org-Id"))
		return Grant{Principal: p}, err
	}
}

func tenant(p Principal) string {
	if p.Org != "" {
		return "org:" + p.Org
	}
	return "sub:" + p.Subject
}
