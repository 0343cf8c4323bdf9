package main

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/session"
	"github.com/voiced/voiced/speechdoor"
)

// The raw speech doors bill the speaker (issue 20 item 3). A request to one carries either the
// service token (a trusted backend; it may name the principal it acts for in these headers, and
// that is whom the meter bills: "service" when it names nobody) or a principal's own credential,
// as the conversation routes take it (a principal JWT, or a ticket: ?ticket=, the api-key
// subprotocol, Authorization: Bearer ek_…), verified by the conversation server and billed to
// that principal and org.
const (
	headerPrincipal = "X-Voiced-Principal"
	headerOrg       = "X-Voiced-Org"
	// maxSpeakerName bounds each of the two headers.
	maxSpeakerName = 256
)

var errSpeakerName = door.NewRefusal(http.StatusBadRequest, "invalid_principal_header",
	"X-Voiced-Principal and X-Voiced-Org name the principal the service token acts for: printable, at most 256 bytes each, and X-Voiced-Org only beside X-Voiced-Principal")

// speakers verifies a raw door request's principal credential: set once the conversation server
// exists (the speech part registers its routes before it); until then, and without one, only
// the service token opens the doors.
type speakers struct {
	conv atomic.Pointer[session.Server]
}

func (sp *speakers) set(s *session.Server) { sp.conv.Store(s) }

// router registers the speech doors behind speakerAuth (doors.Register's Router).
type speakerRouter struct {
	app *App
	sp  *speakers
}

func (r speakerRouter) Handle(pattern string, h http.Handler) {
	r.app.HandlePublic(pattern, r.sp.auth(r.app, h))
}

// auth opens h to the service token (naming the principal it acts for, or nobody) and to a
// principal's credential; the request's context then carries whom to bill (speechdoor.WithSpeaker).
func (sp *speakers) auth(app *App, h http.Handler) http.Handler {
	service := requireAuth(app, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		who, err := namedSpeaker(r)
		if err != nil {
			door.WriteError(w, err)
			return
		}
		h.ServeHTTP(w, r.WithContext(speechdoor.WithSpeaker(r.Context(), who)))
	}))
	var want [sha256.Size]byte
	if app.serviceToken != nil {
		want = sha256.Sum256(app.serviceToken)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conv := sp.conv.Load()
		if conv == nil || !principalCredential(r, app.serviceToken != nil, want) {
			service.ServeHTTP(w, r)
			return
		}
		p, err := conv.Speaker(r)
		if errors.Is(err, session.ErrNoVerifier) {
			service.ServeHTTP(w, r) // no principal JWTs here: a wrong token is the service token's 401
			return
		}
		if err != nil {
			conv.Refuse(w, err)
			return
		}
		h.ServeHTTP(w, r.WithContext(speechdoor.WithSpeaker(r.Context(), speechdoor.Speaker{Principal: p.Subject, Org: p.Org})))
	})
}

// principalCredential: r carries a principal's credential, not the service token: a ticket in the
// query or the subprotocol, or a bearer shaped as a JWT or a ticket that is not the token.
func principalCredential(r *http.Request, hasToken bool, token [sha256.Size]byte) bool {
	if r.URL.Query().Get("ticket") != "" {
		return true
	}
	for _, v := range r.Header.Values("Sec-WebSocket-Protocol") {
		if strings.Contains(v, "openai-insecure-api-key.") {
			return true
		}
	}
	scheme, given, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(given) == "" {
		return false
	}
	given = strings.TrimSpace(given)
	// Only what can be a principal's is one: a JWT (three dot-separated parts) or a ticket (ek_…).
	// Any other bearer is a wrong service token, refused and counted as one (kind="service").
	if strings.Count(given, ".") != 2 && !strings.HasPrefix(given, "ek_") {
		return false
	}
	if !hasToken {
		return true
	}
	got := sha256.Sum256([]byte(given))
	return subtle.ConstantTimeCompare(token[:], got[:]) != 1
}

// namedSpeaker is whom a service-token request names (X-Voiced-Principal, X-Voiced-Org): nobody
// (the zero Speaker: billed to "service") when the headers are absent.
func namedSpeaker(r *http.Request) (speechdoor.Speaker, error) {
	who := speechdoor.Speaker{Principal: r.Header.Get(headerPrincipal), Org: r.Header.Get(headerOrg)}
	if who.Principal == "" && who.Org != "" {
		return who, errSpeakerName
	}
	for _, v := range []string{who.Principal, who.Org} {
		if len(v) > maxSpeakerName || strings.ContainsFunc(v, func(c rune) bool { return c < 0x20 || c == 0x7f }) {
			return who, errSpeakerName
		}
	}
	return who, nil
}

var errOthersUsage = door.NewRefusal(http.StatusForbidden, "forbidden_principal",
	"a principal's JWT reads that principal's own usage only: leave out principal= or name yourself")

// usageAuth opens a usage route to the service token (every principal's usage) and to a
// principal's JWT (its own: the principal filter is set to it; naming another is refused).
func (sp *speakers) usageAuth(app *App, h http.Handler) http.Handler {
	service := requireAuth(app, h)
	var want [sha256.Size]byte
	if app.serviceToken != nil {
		want = sha256.Sum256(app.serviceToken)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conv := sp.conv.Load()
		if conv == nil || !principalCredential(r, app.serviceToken != nil, want) {
			service.ServeHTTP(w, r)
			return
		}
		p, err := conv.VerifyPrincipal(r)
		if errors.Is(err, session.ErrNoVerifier) {
			service.ServeHTTP(w, r)
			return
		}
		if err != nil {
			conv.Refuse(w, err)
			return
		}
		q := r.URL.Query()
		if named := q.Get("principal"); named != "" && named != p.Subject {
			door.WriteError(w, errOthersUsage)
			return
		}
		q.Set("principal", p.Subject)
		r2 := r.Clone(r.Context())
		r2.URL.RawQuery = q.Encode()
		h.ServeHTTP(w, r2)
	})
}
