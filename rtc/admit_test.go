package rtc

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voiced/voiced/internal/testkit"
	"github.com/voiced/voiced/session"
)

// countingBody counts the bytes the handler read of a request body.
type countingBody struct {
	r    io.Reader
	read atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.read.Add(int64(n))
	return n, err
}

// takenMeanwhile is a ticket store where another redemption wins the race between a call's look
// at its ticket and its take: Peek finds the ticket, then it is taken (as another node's socket
// would take it).
type takenMeanwhile struct{ *session.MemoryTickets }

func (s takenMeanwhile) Peek(ctx context.Context, ticket string) (session.Grant, error) {
	g, err := s.MemoryTickets.Peek(ctx, ticket)
	if err == nil {
		s.MemoryTickets.Take(ctx, ticket)
	}
	return g, err
}

func multipartCall(t *testing.T, offer, sess string) (contentType string, body []byte) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	mw.WriteField("sdp", offer)
	mw.WriteField("session", sess)
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return mw.FormDataContentType(), b.Bytes()
}

// TestCallAdmission: a call's credential is checked before a byte of its body is read; a ticket
// is spent only once the offer is answered, so a malformed body, or a session the conversation
// could not start with (the call's own, or the call's laid over the ticket's), is refused by name
// and leaves the ticket usable; a ticket taken between the look and the take is refused
// ticket_invalid and gives its slot back.
func TestCallAdmission(t *testing.T) {
	testkit.CheckLeaks(t)
	ctx := context.Background()
	ep, err := NewEndpoint(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	cl := newClient(t)
	defer cl.close()
	offer := cl.offer(t)

	for name, tc := range map[string]struct {
		ticketSession    string // the ticket's session ("" none; "-" no ticket at all)
		credential       string // when there is no ticket
		contentType      string
		body             func() []byte
		callSession      string // a multipart session part instead of body
		racing           bool   // the ticket is taken between the look and the take
		status           int
		refusal          string
		bodyUnread       bool
		ticketLeftUsable bool
	}{
		"no credential": {ticketSession: "-", contentType: "application/sdp", body: func() []byte { return bytes.Repeat([]byte("v"), MaxSignalBody) },
			status: 401, refusal: "missing_credential", bodyUnread: true},
		"unknown ticket": {ticketSession: "-", credential: session.NewTicket(), contentType: "application/sdp", body: func() []byte { return []byte(offer) },
			status: 401, refusal: "ticket_invalid", bodyUnread: true},
		"bad JWT": {ticketSession: "-", credential: "not.a.jwt", contentType: "application/sdp", body: func() []byte { return []byte(offer) },
			status: 503, refusal: "principal_auth_not_configured", bodyUnread: true},
		"malformed body": {contentType: "text/plain", body: func() []byte { return []byte("hello") },
			status: 400, refusal: "invalid_offer", ticketLeftUsable: true},
		"invalid call session": {callSession: `{"audio":{"output":{"voice":7}}}`,
			status: 400, refusal: "invalid_request", ticketLeftUsable: true},
		// Each valid alone: the ticket's GA object (type) makes the merged one GA, where the
		// call's beta key is unknown.
		"invalid merged session": {ticketSession: `{"type":"realtime","instructions":"Be brief."}`, callSession: `{"modalities":["text"]}`,
			status: 400, refusal: "invalid_request", ticketLeftUsable: true},
		"ticket taken meanwhile": {contentType: "application/sdp", body: func() []byte { return []byte(offer) }, racing: true,
			status: 401, refusal: "ticket_invalid"},
	} {
		t.Run(name, func(t *testing.T) {
			tickets := session.NewMemoryTickets(nil)
			var store session.TicketStore = tickets
			if tc.racing {
				store = takenMeanwhile{tickets}
			}
			srv, err := session.New(session.Config{Tickets: store})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Wait()
			sig := &Signal{Sessions: srv, Endpoint: ep}
			defer sig.Close()
			cred := tc.credential
			if tc.ticketSession != "-" {
				cred = session.NewTicket()
				g := session.Grant{Principal: session.Principal{Subject: "caller"}}
				if tc.ticketSession != "" {
					g.Session = json.RawMessage(tc.ticketSession)
				}
				if err := tickets.Put(ctx, cred, g, time.Minute, 0); err != nil {
					t.Fatal(err)
				}
			}
			contentType, raw := tc.contentType, []byte(nil)
			if tc.callSession != "" {
				contentType, raw = multipartCall(t, offer, tc.callSession)
			} else {
				raw = tc.body()
			}
			body := &countingBody{r: bytes.NewReader(raw)}
			r := httptest.NewRequest("POST", "/v1/realtime/calls", body)
			r.Header.Set("Content-Type", contentType)
			if cred != "" {
				r.Header.Set("Authorization", "Bearer "+cred)
			}
			w := httptest.NewRecorder()
			sig.ServeCalls(w, r)
			var e struct{ Name string }
			json.Unmarshal(w.Body.Bytes(), &e)
			if w.Code != tc.status || e.Name != tc.refusal {
				t.Errorf("%d %q (%s), want %d %q", w.Code, e.Name, strings.TrimSpace(w.Body.String()), tc.status, tc.refusal)
			}
			if n := body.read.Load(); tc.bodyUnread && n > 0 {
				t.Errorf("%d bytes of the body read before the credential was refused", n)
			}
			if tc.ticketLeftUsable {
				if _, err := tickets.Peek(ctx, cred); err != nil {
					t.Errorf("the ticket was spent by a refused call: %v", err)
				}
			}
			if h := srv.VoiceHealth(); h.Busy != 0 {
				t.Errorf("%d slots held after the refusal", h.Busy)
			}
		})
	}
}
