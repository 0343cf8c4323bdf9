package session

import (
	"context"
	"net/http"

	"github.com/voiced/voiced/wire"
)

// A call is a conversation whose transport outlives the HTTP request that opened it (a WebRTC
// call: the offer is answered at once, the media and events flow on afterwards). Its admission is
// Admit, as for a socket; StartCall then runs it in the background, counted like a socket
// (voiced_sessions_open, the drain registry, Wait).

// StartCall runs a conversation on t in the background and returns a channel closed when it has
// ended. release (from Admit) is called once it has; doorName labels voiced_sessions_open. The
// conversation takes part in graceful shutdown like a socket: draining ends it after the reply in
// flight, and the grace period's end cancels it. An error (the server is shutting down: a
// *door.Refusal) means nothing was started and release was called.
func (s *Server) StartCall(t Transport, g Grant, d wire.Dialect, model, doorName string, release func()) (<-chan struct{}, error) {
	ctx, leave := context.Background(), func() {}
	if s.cfg.Sockets != nil {
		var err error
		ctx, leave, err = s.cfg.Sockets.Enter(ctx)
		if err != nil {
			release()
			return nil, err
		}
	}
	done := make(chan struct{})
	s.wg.Add(1)
	open := s.metrics.open.WithLabelValues(doorName)
	open.Inc()
	go func() {
		defer s.wg.Done()
		defer close(done)
		defer open.Dec()
		defer release()
		defer leave()
		s.Converse(ctx, t, g, d, model)
	}()
	return done, nil
}

// Refuse answers a refusal before a conversation opens (Admit's, a call's) in the body both kinds
// of client read, and counts it under its reason in voiced_sessions_refused_total.
func (s *Server) Refuse(w http.ResponseWriter, err error) { s.refuse(w, err) }
