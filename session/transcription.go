package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"slices"

	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/wire"
)

// A transcription session (issue 20) is a conversation whose session type is "transcription":
// it hears, detects turns (server_vad, semantic_vad, or none and the client commits), commits
// each turn as a user item and streams its transcript (conversation.item.input_audio_transcription
// .delta while the turn is held, .completed per turn), and never answers: its turn detection
// creates no response (wire.Session.Become), response.* is refused by name
// (wire.ErrTranscriptionSession), so no mind call and no synthesis ever start. A session becomes
// one by its key (client_secrets with session.type "transcription", or a key minted by POST
// /v1/realtime/transcription_sessions: Grant.Type), the handshake's ?intent=transcription, or its
// first session.update (GA type "transcription", beta transcription_session.update).

// intentTranscription is the handshake's ?intent= for a transcription session.
const intentTranscription = "transcription"

// transcriptionItemsKept is how many committed turns a transcription session keeps for
// conversation.item.retrieve: a caption session runs for hours and its history is not a
// conversation anyone answers, so older turns (transcribed) are forgotten.
const transcriptionItemsKept = 32

// withIntent applies the handshake's ?intent= to a grant: "transcription" makes the conversation
// a transcription session (a key minted with a session object keeps it: it must not ask for a
// realtime session, checked when the conversation starts). Any other intent is refused by name.
func withIntent(g Grant, r *http.Request) (Grant, error) {
	switch intent := r.URL.Query().Get("intent"); intent {
	case "":
		return g, nil
	case intentTranscription:
		g.Type = wire.SessionTranscription
		return g, nil
	default:
		if len(intent) > 64 {
			intent = intent[:64] + "…"
		}
		return g, door.Refuse(ErrBadRequest, "unknown intent '"+intent+"': the realtime handshake knows ?intent=transcription only")
	}
}

// gaObject: a session object in the GA shape (type or audio present), not a beta one.
func gaObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return false
	}
	_, typed := m["type"]
	_, audio := m["audio"]
	return typed || audio
}

func hasSession(raw json.RawMessage) bool {
	return len(raw) > 0 && !bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

// startTranscription makes the conversation a transcription session from its grant (Grant.Type):
// the grant's session object, if any, is a GA one (client_secrets; it must not ask for a realtime
// session) or else a beta transcription session object (the body of POST
// /v1/realtime/transcription_sessions: a beta realtime object's own fields are unknown there).
func (c *conversation) startTranscription() error {
	c.in.sess.Become(wire.SessionTranscription)
	raw := c.grant.Session
	if !hasSession(raw) {
		return nil
	}
	if gaObject(raw) {
		u, err := wire.DecodeSession(raw, c.in.dialect)
		if err != nil {
			return err
		}
		if t := u.Session.Type; t.Set() && t.Value != wire.SessionTranscription {
			return wire.ErrInvalidValue("session.type", "", "Invalid value: '%s'. ?intent=transcription opens a transcription session, and this key was minted for a '%s' session.", t.Value, t.Value)
		}
		return c.in.sess.Apply(u)
	}
	u, err := wire.DecodeTranscriptionSession(raw)
	if err != nil {
		return err
	}
	return c.in.sess.Apply(u)
}

// applyUpdate applies a session.update to next (a copy of the session): the connection's first
// update may change the session's type (a GA client opens a transcription session this way, a
// beta one with transcription_session.update); later ones may not.
func (c *conversation) applyUpdate(next *wire.Session, u *wire.SessionUpdate) error {
	if !c.in.sessionSeen && c.grant.Type == "" && !c.replies.answering() {
		return next.ApplyOpen(u)
	}
	return next.Apply(u)
}

// refusedInTranscription refuses, by name, a client event a transcription session never acts on:
// true when ev was refused.
func (c *conversation) refusedInTranscription(ev wire.ClientEvent) bool {
	if !c.in.sess.Transcribes() {
		return false
	}
	switch ev.(type) {
	case *wire.ResponseCreate, *wire.ResponseCancel, *wire.OutputAudioBufferClear, *wire.ConversationItemTruncate, *wire.InputVideoBufferAppend:
		c.send(wire.ErrTranscriptionSession(ev.EventType(), ev.ClientEventID()))
		return true
	}
	return false
}

// forgetTranscribed keeps a transcription session's history to its last transcriptionItemsKept
// items: older ones whose transcript is in are dropped (their bytes given back). Called by the
// input goroutine before it commits a turn.
func (c *conversation) forgetTranscribed() {
	if !c.in.sess.Transcribes() {
		return
	}
	c.hist.mu.Lock()
	var old []string
	if n := len(c.hist.items) - transcriptionItemsKept; n > 0 {
		for _, e := range c.hist.items[:n] {
			if e.ready == nil || isClosed(e.ready) {
				old = append(old, e.item.ID)
			}
		}
	}
	c.hist.mu.Unlock()
	for _, id := range slices.Backward(old) {
		c.hist.delete(id)
	}
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// ServeTranscriptionSessions is POST /v1/realtime/transcription_sessions (beta): a principal JWT
// and a beta transcription session object in (input_audio_format, input_audio_transcription,
// input_audio_noise_reduction, turn_detection, include, client_secret.expires_at.seconds), an
// ek_ key out with the effective session: a WebSocket or WebRTC call opened with it is a
// transcription session.
func (s *Server) ServeTranscriptionSessions(w http.ResponseWriter, r *http.Request) {
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
		ClientSecret struct {
			ExpiresAt struct {
				Seconds float64 `json:"seconds"`
			} `json:"expires_at"`
		} `json:"client_secret"`
	}
	if hasSession(raw) {
		json.Unmarshal(raw, &meta)
	}
	ttl, err := s.ttl(meta.ClientSecret.ExpiresAt.Seconds)
	var sess wire.Session
	var kept json.RawMessage
	if err == nil {
		sess, kept, err = transcriptionTicketSession(raw)
	}
	if err != nil {
		s.writeMintError(w, err)
		return
	}
	t := NewTicket()
	g := Grant{Principal: p, Session: kept, Type: wire.SessionTranscription}
	if err := s.cfg.Tickets.Put(r.Context(), t, g, ttl, s.cfg.MaxTicketsPerPrincipal); err != nil {
		s.writeMintError(w, err)
		return
	}
	expires := s.cfg.Now().Add(ttl)
	sess.ExpiresAt = expires.Unix()
	out, err := withFields(wire.SessionJSON(&sess, wire.Beta), map[string]any{
		"client_secret": map[string]any{"value": t, "expires_at": expires.Unix()}})
	if err != nil {
		s.writeMintError(w, err)
		return
	}
	writeJSON(w, out)
}

// transcriptionTicketSession checks a beta transcription session object as the conversation will
// apply it, and returns the effective session and what the ticket keeps (the fields applied).
func transcriptionTicketSession(raw json.RawMessage) (wire.Session, json.RawMessage, error) {
	sess := wire.NewSession(wire.NewID("sess_"), "")
	sess.Become(wire.SessionTranscription)
	if !hasSession(raw) {
		return sess, nil, nil
	}
	u, err := wire.DecodeTranscriptionSession(raw)
	if err == nil {
		err = sess.Apply(u)
	}
	if err != nil {
		msg := "the session object is not valid"
		var we *wire.Error
		if errors.As(err, &we) {
			msg = we.Message
		}
		return sess, nil, door.Refuse(ErrBadRequest, msg)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return sess, nil, door.Refuse(ErrBadRequest, "the session object is not valid")
	}
	for k := range fields {
		if slices.Contains(u.Session.Ignored, "session."+k) {
			delete(fields, k)
		}
	}
	if len(fields) == 0 {
		return sess, nil, nil
	}
	kept, err := json.Marshal(fields)
	return sess, kept, err
}
