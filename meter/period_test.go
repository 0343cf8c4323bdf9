package meter

import (
	"net/http/httptest"
	"testing"
	"time"
)

// period=month is the calendar month of now, first day to last, in UTC; period=day is today. The
// month's last day is where a bill ends: February of a leap year, a 31-day month, December.
func TestPeriodMonthIsTheCalendarMonth(t *testing.T) {
	for _, c := range []struct{ now, from, to string }{
		{"2028-02-10", "2028-02-01", "2028-02-29"},
		{"2027-02-28", "2027-02-01", "2027-02-28"},
		{"2026-01-31", "2026-01-01", "2026-01-31"},
		{"2026-12-05", "2026-12-01", "2026-12-31"},
	} {
		now, _ := time.Parse(time.DateOnly, c.now)
		r := httptest.NewRequest("GET", "/v1/usage?period=month", nil)
		f, err := ParseFilter(r, now.Add(13*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if got := f.From.Format(time.DateOnly) + ".." + f.To.Format(time.DateOnly); got != c.from+".."+c.to {
			t.Errorf("period=month on %s: %s, want %s..%s", c.now, got, c.from, c.to)
		}
	}
}

// A zero Config gets the documented defaults; a set one is kept.
func TestConfigDefaults(t *testing.T) {
	m := New(openSQLite(t), Config{})
	defer m.Close(t.Context())
	want := Config{FlushEvery: time.Second, CloseWait: 10 * time.Second, MaxPendingKeys: 100_000, QuotaStaleAfter: 15 * time.Minute}
	got := m.cfg
	if got.FlushEvery != want.FlushEvery || got.CloseWait != want.CloseWait || got.MaxPendingKeys != want.MaxPendingKeys || got.QuotaStaleAfter != want.QuotaStaleAfter {
		t.Errorf("defaults: flush %s close %s keys %d stale %s, want %s %s %d %s", got.FlushEvery, got.CloseWait,
			got.MaxPendingKeys, got.QuotaStaleAfter, want.FlushEvery, want.CloseWait, want.MaxPendingKeys, want.QuotaStaleAfter)
	}
	set := Config{FlushEvery: 3 * time.Millisecond, CloseWait: time.Millisecond, MaxPendingKeys: 1, QuotaStaleAfter: -1}
	m2 := New(openSQLite(t), set)
	defer m2.Close(t.Context())
	if g := m2.cfg; g.FlushEvery != set.FlushEvery || g.CloseWait != set.CloseWait || g.MaxPendingKeys != 1 || g.QuotaStaleAfter != -1 {
		t.Errorf("a set config was replaced: %+v", g)
	}
}
