package meter

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// Session records (issue 20 item 4): written open, updated (seconds never go down), closed with
// an end and a reason; listed by principal, org, period and id, a page at a time; in SQLite and,
// when VOICED_TEST_POSTGRES_DSN is set, Postgres.
func TestSessionRecords(t *testing.T) {
	for name, st := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			ss := st.(SessionStore)
			p := "sess-" + name + time.Now().Format("150405.000000")
			t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
			for i, id := range []string{"a", "b", "c"} {
				r := SessionRecord{ID: p + id, Principal: p, Org: "acme", Door: "conversation", Transport: "websocket",
					Start: t0.Add(time.Duration(i) * time.Hour)}
				if err := ss.PutSession(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
			// b grows, then a late, smaller write (out of order) does not lower it; then it ends.
			grow := SessionRecord{ID: p + "b", Principal: p, Org: "acme", Door: "transcription", Transport: "websocket", Start: t0.Add(time.Hour), Heard: 2.5, Spoken: 1}
			if err := ss.PutSession(ctx, grow); err != nil {
				t.Fatal(err)
			}
			end := t0.Add(90 * time.Minute)
			done := grow
			done.Heard, done.End, done.EndReason = 1, &end, "idle"
			if err := ss.PutSession(ctx, done); err != nil {
				t.Fatal(err)
			}
			page, err := ss.Sessions(ctx, SessionFilter{Filter: Filter{Principal: p}, ID: p + "b"})
			if err != nil || len(page.Sessions) != 1 {
				t.Fatalf("b: %+v %v", page, err)
			}
			b := page.Sessions[0]
			if b.Heard != 2.5 || b.Spoken != 1 || b.End == nil || !b.End.Equal(end) || b.EndReason != "idle" || b.Door != "transcription" || !b.Start.Equal(t0.Add(time.Hour)) {
				t.Fatalf("b: %+v", b)
			}
			// Paging by start: two, then one.
			first, err := ss.Sessions(ctx, SessionFilter{Filter: Filter{Principal: p}, Limit: 2})
			if err != nil || len(first.Sessions) != 2 || first.Next == nil || first.Sessions[0].ID != p+"a" {
				t.Fatalf("first page: %+v %v", first, err)
			}
			second, err := ss.Sessions(ctx, SessionFilter{Filter: Filter{Principal: p}, Limit: 2, After: *first.Next})
			if err != nil || len(second.Sessions) != 1 || second.Next != nil || second.Sessions[0].ID != p+"c" {
				t.Fatalf("second page: %+v %v", second, err)
			}
			// Period and org.
			day, _ := ss.Sessions(ctx, SessionFilter{Filter: Filter{Principal: p, From: t0, To: t0}})
			if len(day.Sessions) != 3 {
				t.Errorf("the day: %d sessions", len(day.Sessions))
			}
			none, _ := ss.Sessions(ctx, SessionFilter{Filter: Filter{Principal: p, From: t0.AddDate(0, 0, 1)}})
			other, _ := ss.Sessions(ctx, SessionFilter{Filter: Filter{Principal: p, Org: "globex"}})
			if len(none.Sessions) != 0 || len(other.Sessions) != 0 {
				t.Errorf("next day %d, other org %d", len(none.Sessions), len(other.Sessions))
			}
			if _, err := ss.Sessions(ctx, SessionFilter{After: "not-a-cursor"}); err == nil {
				t.Error("a bad cursor was accepted")
			}
		})
	}
}

// GET /v1/usage?view=sessions lists the session records (issue 20 item 4: "GET /v1/usage can list
// them"), with the same filters and paging as GET /v1/usage/sessions; without view= the report
// per principal is unchanged; an unknown view is refused by name.
func TestUsageViewSessions(t *testing.T) {
	now := time.Date(2026, 5, 5, 12, 0, 0, 0, time.UTC)
	store := openSQLite(t)
	m := New(store, Config{FlushEvery: time.Hour, Now: func() time.Time { return now }})
	defer m.Close(context.Background())
	ctx := context.Background()
	for i, who := range []string{"erin", "erin", "frank"} {
		if err := store.PutSession(ctx, SessionRecord{ID: fmt.Sprintf("s%d", i), Principal: who, Org: "acme", Door: "transcription",
			Transport: "webrtc", Start: now.Add(time.Duration(i) * time.Minute), Heard: float64(i + 1)}); err != nil {
			t.Fatal(err)
		}
	}
	store.Add(ctx, []Record{{Principal: "erin", Org: "acme", Door: DoorConversation, At: now, Heard: 2}})
	h := m.UsageHandler()
	get := func(query string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/usage"+query, nil))
		return rec
	}
	rec := get("?view=sessions&principal=erin&limit=1")
	var page SessionPage
	if err := json.Unmarshal(rec.Body.Bytes(), &page); rec.Code != 200 || err != nil {
		t.Fatalf("view=sessions: %d %s", rec.Code, rec.Body)
	}
	if len(page.Sessions) != 1 || page.Sessions[0].ID != "s0" || page.Next == nil {
		t.Fatalf("first page: %+v", page)
	}
	rec = get("?view=sessions&principal=erin&limit=1&after=" + url.QueryEscape(*page.Next))
	page = SessionPage{}
	json.Unmarshal(rec.Body.Bytes(), &page)
	if len(page.Sessions) != 1 || page.Sessions[0].ID != "s1" || page.Sessions[0].Heard != 2 || page.Next != nil {
		t.Fatalf("second page: %+v", page)
	}
	page = SessionPage{}
	json.Unmarshal(get("?view=sessions&from=2026-05-06").Body.Bytes(), &page)
	if len(page.Sessions) != 0 {
		t.Fatalf("a later period: %+v", page)
	}
	var rep UsageReport
	for _, q := range []string{"", "?view=principals"} {
		rec = get(q)
		if err := json.Unmarshal(rec.Body.Bytes(), &rep); rec.Code != 200 || err != nil || rep.HeardSeconds != 2 || len(rep.Principals) != 1 {
			t.Fatalf("GET /v1/usage%s: %d %s", q, rec.Code, rec.Body)
		}
	}
	if rec = get("?view=days"); rec.Code != 400 || !strings.Contains(rec.Body.String(), "bad_usage_filter") {
		t.Fatalf("view=days: %d %s", rec.Code, rec.Body)
	}
}
