package meter

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"
)

// UsageReport is the body of GET /v1/usage.
type UsageReport struct {
	From          string           `json:"from,omitempty"`
	To            string           `json:"to,omitempty"`
	HeardSeconds  float64          `json:"heardSeconds"`
	SpokenSeconds float64          `json:"spokenSeconds"`
	Principals    []PrincipalUsage `json:"principals"`
}

// PrincipalUsage is one principal's seconds in one org, in total and per day.
type PrincipalUsage struct {
	Principal     string     `json:"principal"`
	Org           string     `json:"org"`
	HeardSeconds  float64    `json:"heardSeconds"`
	SpokenSeconds float64    `json:"spokenSeconds"`
	Days          []DayUsage `json:"days"`
}

// DayUsage is one UTC day, with the split by door.
type DayUsage struct {
	Day           string                 `json:"day"`
	HeardSeconds  float64                `json:"heardSeconds"`
	SpokenSeconds float64                `json:"spokenSeconds"`
	Doors         map[string]DoorSeconds `json:"doors"`
}

// DoorSeconds is one door's seconds on one day.
type DoorSeconds struct {
	HeardSeconds  float64 `json:"heardSeconds"`
	SpokenSeconds float64 `json:"spokenSeconds"`
}

// Report folds rows (ordered by principal, org, day) into a report.
func Report(f Filter, rows []Row) UsageReport {
	rep := UsageReport{Principals: []PrincipalUsage{}}
	if !f.From.IsZero() {
		rep.From = Day(f.From)
	}
	if !f.To.IsZero() {
		rep.To = Day(f.To)
	}
	for _, r := range rows {
		n := len(rep.Principals)
		if n == 0 || rep.Principals[n-1].Principal != r.Principal || rep.Principals[n-1].Org != r.Org {
			rep.Principals = append(rep.Principals, PrincipalUsage{Principal: r.Principal, Org: r.Org, Days: []DayUsage{}})
			n++
		}
		p := &rep.Principals[n-1]
		if len(p.Days) == 0 || p.Days[len(p.Days)-1].Day != r.Day {
			p.Days = append(p.Days, DayUsage{Day: r.Day, Doors: map[string]DoorSeconds{}})
		}
		d := &p.Days[len(p.Days)-1]
		ds := d.Doors[r.Door]
		ds.HeardSeconds += r.Heard
		ds.SpokenSeconds += r.Spoken
		d.Doors[r.Door] = ds
		d.HeardSeconds += r.Heard
		d.SpokenSeconds += r.Spoken
		p.HeardSeconds += r.Heard
		p.SpokenSeconds += r.Spoken
		rep.HeardSeconds += r.Heard
		rep.SpokenSeconds += r.Spoken
	}
	rep.round()
	return rep
}

// round trims the float sums' noise (15.039999999999877) to the microsecond: a sample at
// 24 kHz is 41.7 µs, so no second that was heard or spoken is lost to it.
func (rep *UsageReport) round() {
	r := func(x *float64) { *x = math.Round(*x*1e6) / 1e6 }
	r(&rep.HeardSeconds)
	r(&rep.SpokenSeconds)
	for i := range rep.Principals {
		p := &rep.Principals[i]
		r(&p.HeardSeconds)
		r(&p.SpokenSeconds)
		for j := range p.Days {
			d := &p.Days[j]
			r(&d.HeardSeconds)
			r(&d.SpokenSeconds)
			for k, ds := range d.Doors {
				r(&ds.HeardSeconds)
				r(&ds.SpokenSeconds)
				d.Doors[k] = ds
			}
		}
	}
}

// ParseFilter reads principal, org, from and to (YYYY-MM-DD, UTC, inclusive) from a query.
// period=day|month is a shorthand for today or this month when from/to are absent.
func ParseFilter(r *http.Request, now time.Time) (Filter, error) {
	q := r.URL.Query()
	f := Filter{Principal: q.Get("principal"), Org: q.Get("org")}
	var err error
	if s := q.Get("from"); s != "" {
		if f.From, err = time.Parse(time.DateOnly, s); err != nil {
			return f, fmt.Errorf("%w: from=%q is not YYYY-MM-DD", ErrBadFilter, s)
		}
	}
	if s := q.Get("to"); s != "" {
		if f.To, err = time.Parse(time.DateOnly, s); err != nil {
			return f, fmt.Errorf("%w: to=%q is not YYYY-MM-DD", ErrBadFilter, s)
		}
	}
	switch p := q.Get("period"); p {
	case "":
	case "day":
		if f.From.IsZero() && f.To.IsZero() {
			f.From, f.To = now, now
		}
	case "month":
		if f.From.IsZero() && f.To.IsZero() {
			y, m, _ := now.UTC().Date()
			f.From = time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
			f.To = f.From.AddDate(0, 1, -1)
		}
	default:
		return f, fmt.Errorf("%w: period=%q (use day or month, or from/to)", ErrBadFilter, p)
	}
	if !f.From.IsZero() && !f.To.IsZero() && f.To.Before(f.From) {
		return f, fmt.Errorf("%w: to is before from", ErrBadFilter)
	}
	return f, nil
}

// Views of GET /v1/usage (?view=): the seconds per principal and day (the default), or the
// usage records per session (the listing GET /v1/usage/sessions also serves).
const (
	ViewPrincipals = "principals"
	ViewSessions   = "sessions"
)

// UsageHandler serves GET /v1/usage: ?view=sessions lists the session records (as
// SessionsHandler), otherwise the report per principal. Authentication is the caller's.
func (m *Meter) UsageHandler() http.Handler {
	sessions := m.SessionsHandler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch v := r.URL.Query().Get("view"); v {
		case "", ViewPrincipals:
		case ViewSessions:
			sessions.ServeHTTP(w, r)
			return
		default:
			if len(v) > 64 {
				v = v[:64] + "…"
			}
			writeJSON(w, http.StatusBadRequest, map[string]string{"type": "error", "name": "bad_usage_filter",
				"message": fmt.Sprintf("%v: view=%q (use principals, the default, or sessions)", ErrBadFilter, v)})
			return
		}
		f, err := ParseFilter(r, m.cfg.Now())
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"type": "error", "name": "bad_usage_filter", "message": err.Error()})
			return
		}
		rows, err := m.Usage(r.Context(), f)
		if err != nil {
			status, name := http.StatusInternalServerError, "internal_error"
			if errors.Is(err, ErrStoreDown) {
				status, name = http.StatusServiceUnavailable, "meter_store_unavailable"
			}
			m.cfg.Log.Error("usage query failed", "err", err)
			writeJSON(w, status, map[string]string{"type": "error", "name": name, "message": "the meter store could not be read; see the server log"})
			return
		}
		writeJSON(w, http.StatusOK, Report(f, rows))
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
