package rtc

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/session"
	"github.com/voiced/voiced/wire"
)

// Refusals of the signalling routes, by name.
var (
	ErrRefusedBody = door.NewRefusal(http.StatusBadRequest, "invalid_offer",
		"the body must be an SDP offer (Content-Type: application/sdp) or multipart/form-data with an sdp part and an optional session part (a JSON object)")
	ErrRefusedOffer = door.NewRefusal(http.StatusBadRequest, "invalid_offer",
		"the SDP offer could not be answered: it needs an audio m-line offering Opus (opus/48000/2)")
	ErrCallNotFound = door.NewRefusal(http.StatusNotFound, "call_not_found",
		"no call with this id is running")
	ErrAnswerFailed = door.NewRefusal(http.StatusInternalServerError, "call_failed",
		"the server could not set up the call; see its log")
)

// answerTimeout bounds answering an offer (ICE gathering on this host's interfaces).
const answerTimeout = 10 * time.Second

// Signal serves WebRTC signalling as OpenAI does: POST /v1/realtime/calls (GA; the offer as
// application/sdp, or multipart/form-data with "sdp" and "session" parts), POST
// /v1/realtime?model= with an SDP body (beta, with OpenAI-Beta: realtime=v1), and ending a call
// (DELETE /v1/realtime/calls/{call_id}, POST /v1/realtime/calls/{call_id}/hangup). A call is
// admitted as a WebSocket is (session.Server.AdmitCall: origin, readiness, caps, credential,
// quota), before its body is read; its ticket is spent only once the offer is answered. It is
// counted against the same caps, and drained at shutdown like a socket.
type Signal struct {
	Sessions *session.Server
	Endpoint *Endpoint
	Log      *slog.Logger
	// Peers, when set, makes call ids name this node and forwards hang-ups and sideband sockets
	// for another node's call to it (peers.go); nil: calls are this node's alone.
	Peers door.Peers

	mu    sync.Mutex
	calls map[string]*Transport
	wg    sync.WaitGroup // the watchers that forget ended calls
}

// ServeCalls is POST /v1/realtime/calls (the GA dialect).
func (s *Signal) ServeCalls(w http.ResponseWriter, r *http.Request) { s.serve(w, r, wire.GA) }

// ServeBeta is POST /v1/realtime?model= with an SDP offer (the dialect the handshake asks for:
// beta with OpenAI-Beta: realtime=v1).
func (s *Signal) ServeBeta(w http.ResponseWriter, r *http.Request) {
	s.serve(w, r, wire.DialectFromHandshake(r.Header))
}

func (s *Signal) serve(w http.ResponseWriter, r *http.Request, d wire.Dialect) {
	// The credential first, so nothing of an unauthenticated body is read; a ticket is only looked
	// at: a malformed body or session must not spend it. It is taken once the offer is answered.
	grant, release, redeem, err := s.Sessions.AdmitCall(r)
	if err != nil {
		s.Sessions.Refuse(w, err)
		return
	}
	offer, sess, err := ParseCallBody(r.Header.Get("Content-Type"), r.Body)
	if err != nil {
		release()
		s.Sessions.Refuse(w, door.Refuse(ErrRefusedBody, ErrRefusedBody.Message()+" ("+strings.TrimPrefix(err.Error(), "rtc: ")+")"))
		return
	}
	if err := ValidateOffer(offer); err != nil {
		release()
		s.Sessions.Refuse(w, door.Refuse(ErrRefusedOffer, "the SDP offer could not be answered: "+strings.TrimPrefix(err.Error(), "rtc: ")))
		return
	}
	if len(sess) > 0 {
		grant.Session = mergeSession(grant.Session, sess)
	}
	// The session the conversation will start with, checked as it will apply it: refused now, the
	// ticket is kept; found only once the call runs, the call would die with its ticket spent.
	if err := session.CheckSession(grant.Session, d); err != nil {
		release()
		s.Sessions.Refuse(w, err)
		return
	}
	model := r.URL.Query().Get("model")
	if model == "" {
		model = grant.Model
	}
	t := NewTransport()
	ctx, cancel := context.WithTimeout(r.Context(), answerTimeout)
	answer, call, err := s.Endpoint.Answer(ctx, offer, t.Handlers())
	cancel()
	if err != nil {
		release()
		if errors.Is(err, ErrBadOffer) || errors.Is(err, ErrNoAudio) || errors.Is(err, ErrNoOpus) {
			s.Sessions.Refuse(w, door.Refuse(ErrRefusedOffer, "the SDP offer could not be answered: "+strings.TrimPrefix(err.Error(), "rtc: ")))
			return
		}
		s.log().Error("answer a WebRTC offer", "err", err)
		s.Sessions.Refuse(w, ErrAnswerFailed)
		return
	}
	if err := redeem(r.Context()); err != nil { // taken meanwhile (another call, a socket), or the store away
		call.Close()
		release()
		s.Sessions.Refuse(w, err)
		return
	}
	t.Bind(call)
	done, err := s.Sessions.StartCall(t, grant, d, model, "webrtc", release)
	if err != nil {
		call.Close()
		s.Sessions.Refuse(w, err)
		return
	}
	id := s.newCallID()
	s.mu.Lock()
	if s.calls == nil {
		s.calls = map[string]*Transport{}
	}
	s.calls[id] = t
	s.mu.Unlock()
	s.wg.Go(func() {
		<-done
		s.mu.Lock()
		delete(s.calls, id)
		s.mu.Unlock()
	})
	w.Header().Set("Location", "/v1/realtime/calls/"+id)
	w.Header().Set("Content-Type", "application/sdp")
	w.WriteHeader(http.StatusCreated)
	w.Write([]byte(answer))
}

// ServeHangup is DELETE /v1/realtime/calls/{call_id} and POST /v1/realtime/calls/{call_id}/hangup:
// the call ends (its meter flushes as the conversation closes).
func (s *Signal) ServeHangup(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("call_id")
	if s.forwarded(w, r, id) {
		return
	}
	s.mu.Lock()
	t := s.calls[id]
	s.mu.Unlock()
	if t == nil {
		door.WriteError(w, ErrCallNotFound)
		return
	}
	t.Close(session.EndNormal, "hung up")
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte("{}\n"))
}

// Open reports the calls running.
func (s *Signal) Open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.calls)
}

// Close hangs up every call still running and waits for them to be forgotten; the conversations
// themselves are waited for by session.Server.Wait.
func (s *Signal) Close() {
	s.mu.Lock()
	open := make([]*Transport, 0, len(s.calls))
	for _, t := range s.calls {
		open = append(open, t)
	}
	s.mu.Unlock()
	for _, t := range open {
		t.Close(session.EndGoingAway, "server stopping")
	}
	s.wg.Wait()
}

func (s *Signal) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

// mergeSession lays the call's session object over the ticket's (shallow: the call's keys win).
func mergeSession(ticket, call json.RawMessage) json.RawMessage {
	var base, over map[string]json.RawMessage
	if len(ticket) == 0 || string(ticket) == "null" || json.Unmarshal(ticket, &base) != nil || base == nil {
		return call
	}
	if json.Unmarshal(call, &over) != nil {
		return ticket
	}
	for k, v := range over {
		base[k] = v
	}
	b, err := json.Marshal(base)
	if err != nil {
		return call
	}
	return b
}
