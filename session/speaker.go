package session

import (
	"net/http"

	"github.com/voiced/voiced/door"
)

// Speaker verifies a raw speech door's principal credential (issue 20 item 3) the way the
// conversation routes take one: a ticket (?ticket=, the api-key subprotocol, or Authorization:
// Bearer ek_…; spent, as a conversation would spend it) or a principal JWT (Authorization: Bearer,
// X-Org-Id by the org rule); then the principal's quota (Engines.Admit). The door then meters
// under the principal and org returned.
func (s *Server) Speaker(r *http.Request) (Principal, error) {
	g, err := s.authenticate(r, s.cfg.Tickets.Take)
	if err != nil {
		return Principal{}, withReason(err, door.ReasonAuth)
	}
	if admit := s.cfg.Engines.Admit; admit != nil {
		if err := admit(r.Context(), g.Principal); err != nil {
			return Principal{}, withReason(err, door.ReasonQuota)
		}
	}
	return g.Principal, nil
}

// VerifyPrincipal verifies r's principal JWT (Authorization: Bearer, X-Org-Id by the org rule),
// as the minting routes do: a principal reading its own usage.
func (s *Server) VerifyPrincipal(r *http.Request) (Principal, error) {
	p, err := s.principal(r)
	if err != nil {
		return Principal{}, withReason(err, door.ReasonAuth)
	}
	return p, nil
}
