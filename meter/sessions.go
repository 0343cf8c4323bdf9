package meter

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Usage per session (issue 20 item 4): every conversation, call and transcription session has a
// record (id, principal, org, door, transport, start, end, seconds heard and spoken, why it
// ended), written when it starts (open: no end), again as its seconds grow, and when it ends, in
// the meter's store (SQLite or Postgres). A kill -9 leaves the record open with the seconds of
// its last write.

// SessionRecord is one session's usage.
type SessionRecord struct {
	ID        string     `json:"id"`
	Principal string     `json:"principal"`
	Org       string     `json:"org"`
	Door      string     `json:"door"`      // conversation | transcription
	Transport string     `json:"transport"` // websocket | webrtc
	Start     time.Time  `json:"start"`
	End       *time.Time `json:"end"` // nil while open (or cut off by a crash)
	Heard     float64    `json:"heardSeconds"`
	Spoken    float64    `json:"spokenSeconds"`
	EndReason string     `json:"endReason"`
}

// SessionFilter selects session records: empty fields select all; From/To are inclusive UTC days
// of the start; After is the cursor of the page before (SessionPage.Next); Limit is the page size.
type SessionFilter struct {
	Filter
	ID    string
	After string
	Limit int
}

// SessionPage is the body of GET /v1/usage/sessions.
type SessionPage struct {
	Sessions []SessionRecord `json:"sessions"`
	Next     *string         `json:"next"` // the cursor of the next page; null on the last
}

// Bounds of a listing.
const (
	DefaultSessionPage = 100
	MaxSessionPage     = 1000
)

// SessionStore keeps session records (*SQL).
type SessionStore interface {
	PutSession(ctx context.Context, r SessionRecord) error
	Sessions(ctx context.Context, f SessionFilter) (SessionPage, error)
}

var _ SessionStore = (*SQL)(nil)

// ErrNoSessionStore: the meter's store keeps no session records.
var ErrNoSessionStore = errors.New("meter: the store keeps no session records")

// sessionTables are the session records' tables: idempotent statements run at every open, not
// numbered migrations (their numbers would collide with other branches' in schema_migrations).
var sessionTables = []string{
	`CREATE TABLE IF NOT EXISTS usage_sessions (
		id             TEXT PRIMARY KEY,
		principal      TEXT NOT NULL,
		org            TEXT NOT NULL,
		door           TEXT NOT NULL,
		transport      TEXT NOT NULL,
		started        TEXT NOT NULL,
		ended          TEXT NOT NULL DEFAULT '',
		heard_seconds  DOUBLE PRECISION NOT NULL DEFAULT 0,
		spoken_seconds DOUBLE PRECISION NOT NULL DEFAULT 0,
		end_reason     TEXT NOT NULL DEFAULT ''
	)`,
	`CREATE INDEX IF NOT EXISTS usage_sessions_principal ON usage_sessions (principal, started, id)`,
	`CREATE INDEX IF NOT EXISTS usage_sessions_started ON usage_sessions (started, id)`,
}

func (s *SQL) migrateSessions(ctx context.Context) error {
	for _, stmt := range sessionTables {
		if _, err := s.db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("meter: session records table: %w", err)
		}
	}
	return nil
}

// stamp is a moment as stored: fixed width, so text order is time order.
const stamp = "2006-01-02T15:04:05.000000000Z"

// PutSession writes r (insert, or update of its end, seconds and reason): seconds never go down.
func (s *SQL) PutSession(ctx context.Context, r SessionRecord) error {
	ended := ""
	if r.End != nil {
		ended = r.End.UTC().Format(stamp)
	}
	_, err := s.db.ExecContext(ctx, s.rebind(`INSERT INTO usage_sessions
		(id, principal, org, door, transport, started, ended, heard_seconds, spoken_seconds, end_reason)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET door = excluded.door, ended = excluded.ended,
		heard_seconds = CASE WHEN excluded.heard_seconds > usage_sessions.heard_seconds THEN excluded.heard_seconds ELSE usage_sessions.heard_seconds END,
		spoken_seconds = CASE WHEN excluded.spoken_seconds > usage_sessions.spoken_seconds THEN excluded.spoken_seconds ELSE usage_sessions.spoken_seconds END,
		end_reason = excluded.end_reason`),
		r.ID, r.Principal, r.Org, r.Door, r.Transport, r.Start.UTC().Format(stamp), ended, r.Heard, r.Spoken, r.EndReason)
	if err != nil {
		return fmt.Errorf("%w: session record: %v", ErrStoreDown, err)
	}
	return nil
}

// Sessions lists records by start (oldest first), a page at a time.
func (s *SQL) Sessions(ctx context.Context, f SessionFilter) (SessionPage, error) {
	limit := f.Limit
	if limit <= 0 || limit > MaxSessionPage {
		limit = DefaultSessionPage
	}
	var where []string
	var args []any
	add := func(cond string, v ...any) { where = append(where, cond); args = append(args, v...) }
	if f.Principal != "" {
		add("principal = ?", f.Principal)
	}
	if f.Org != "" {
		add("org = ?", f.Org)
	}
	if f.ID != "" {
		add("id = ?", f.ID)
	}
	if !f.From.IsZero() {
		add("started >= ?", Day(f.From))
	}
	if !f.To.IsZero() {
		add("started < ?", Day(f.To.AddDate(0, 0, 1)))
	}
	if f.After != "" {
		at, id, ok := strings.Cut(f.After, "|")
		if !ok {
			return SessionPage{}, fmt.Errorf("%w: after=%q is not a cursor this listing gave", ErrBadFilter, f.After)
		}
		add("(started > ? OR (started = ? AND id > ?))", at, at, id)
	}
	q := `SELECT id, principal, org, door, transport, started, ended, heard_seconds, spoken_seconds, end_reason FROM usage_sessions`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY started, id LIMIT " + strconv.Itoa(limit+1)
	rows, err := s.db.QueryContext(ctx, s.rebind(q), args...)
	if err != nil {
		return SessionPage{}, fmt.Errorf("%w: sessions: %v", ErrStoreDown, err)
	}
	defer rows.Close()
	page := SessionPage{Sessions: []SessionRecord{}}
	var starts []string
	for rows.Next() {
		var r SessionRecord
		var started, ended string
		if err := rows.Scan(&r.ID, &r.Principal, &r.Org, &r.Door, &r.Transport, &started, &ended, &r.Heard, &r.Spoken, &r.EndReason); err != nil {
			return SessionPage{}, fmt.Errorf("%w: sessions: %v", ErrStoreDown, err)
		}
		r.Start, _ = time.Parse(stamp, started)
		if ended != "" {
			t, _ := time.Parse(stamp, ended)
			r.End = &t
		}
		r.Heard, r.Spoken = roundMicro(r.Heard), roundMicro(r.Spoken)
		page.Sessions = append(page.Sessions, r)
		starts = append(starts, started)
	}
	if err := rows.Err(); err != nil {
		return SessionPage{}, fmt.Errorf("%w: sessions: %v", ErrStoreDown, err)
	}
	if len(page.Sessions) > limit {
		page.Sessions = page.Sessions[:limit]
		next := starts[limit-1] + "|" + page.Sessions[limit-1].ID
		page.Next = &next
	}
	return page, nil
}

func roundMicro(x float64) float64 { return float64(int64(x*1e6+0.5)) / 1e6 }

// PutSession writes a session's record to the store (now, not batched: a session starts and ends
// once, and its seconds are rewritten at most once a second).
func (m *Meter) PutSession(ctx context.Context, r SessionRecord) error {
	ss, ok := m.store.(SessionStore)
	if !ok {
		return ErrNoSessionStore
	}
	return ss.PutSession(ctx, r)
}

// Sessions lists session records.
func (m *Meter) Sessions(ctx context.Context, f SessionFilter) (SessionPage, error) {
	ss, ok := m.store.(SessionStore)
	if !ok {
		return SessionPage{}, ErrNoSessionStore
	}
	return ss.Sessions(ctx, f)
}

// ParseSessionFilter reads a listing's query: ParseFilter's principal, org, from, to, period,
// and id, after (a cursor), limit (1..MaxSessionPage).
func ParseSessionFilter(r *http.Request, now time.Time) (SessionFilter, error) {
	base, err := ParseFilter(r, now)
	f := SessionFilter{Filter: base, ID: r.URL.Query().Get("id"), After: r.URL.Query().Get("after")}
	if err != nil {
		return f, err
	}
	if s := r.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxSessionPage {
			return f, fmt.Errorf("%w: limit=%q (1 to %d)", ErrBadFilter, s, MaxSessionPage)
		}
		f.Limit = n
	}
	if len(f.ID) > 256 || len(f.After) > 512 || len(f.Principal) > 256 || len(f.Org) > 256 {
		return f, fmt.Errorf("%w: a filter value is over 256 bytes", ErrBadFilter)
	}
	return f, nil
}

// SessionsHandler serves GET /v1/usage/sessions. Authentication and scope are the caller's
// (cmd/voiced: the service token reads all, a principal's JWT its own).
func (m *Meter) SessionsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, err := ParseSessionFilter(r, m.cfg.Now())
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"type": "error", "name": "bad_usage_filter", "message": err.Error()})
			return
		}
		page, err := m.Sessions(r.Context(), f)
		if err != nil {
			if errors.Is(err, ErrBadFilter) {
				writeJSON(w, http.StatusBadRequest, map[string]string{"type": "error", "name": "bad_usage_filter", "message": err.Error()})
				return
			}
			m.cfg.Log.Error("session usage query failed", "err", err)
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"type": "error", "name": "meter_store_unavailable", "message": "the meter store could not be read; see the server log"})
			return
		}
		writeJSON(w, http.StatusOK, page)
	})
}

// QuotaReport is the body of GET /v1/usage/quota: one principal's daily quota and what is left
// of it today (UTC). Limited false: no quota (the seconds fields are then 0).
type QuotaReport struct {
	Principal        string  `json:"principal"`
	Limited          bool    `json:"limited"`
	SecondsPerDay    float64 `json:"secondsPerDay"`
	UsedSeconds      float64 `json:"usedSeconds"`
	RemainingSeconds float64 `json:"remainingSeconds"`
	Day              string  `json:"day"`
}

// QuotaHandler serves GET /v1/usage/quota?principal= (required; a principal's JWT sets it to its
// own). Authentication and scope are the caller's.
func (m *Meter) QuotaHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Query().Get("principal")
		if p == "" || len(p) > 256 {
			writeJSON(w, http.StatusBadRequest, map[string]string{"type": "error", "name": "bad_usage_filter", "message": "principal= names whose quota to read (at most 256 bytes)"})
			return
		}
		rep := QuotaReport{Principal: p, Day: Day(m.cfg.Now())}
		if m.cfg.QuotaSecondsPerDay > 0 {
			used, err := m.Used(r.Context(), p)
			if err != nil {
				m.cfg.Log.Error("quota read failed", "err", err)
				writeJSON(w, http.StatusServiceUnavailable, map[string]string{"type": "error", "name": "meter_store_unavailable", "message": "the meter store could not be read; see the server log"})
				return
			}
			rep.Limited, rep.SecondsPerDay = true, m.cfg.QuotaSecondsPerDay
			rep.UsedSeconds = roundMicro(min(used, m.cfg.QuotaSecondsPerDay))
			rep.RemainingSeconds = roundMicro(max(m.cfg.QuotaSecondsPerDay-used, 0))
		}
		writeJSON(w, http.StatusOK, rep)
	})
}
