package meter

import (
	"context"
	"testing"
	"time"
)

// Add counts a side alone (spoken with nothing heard, heard with nothing spoken) and ignores an
// add of nothing: no pending key, no row (found by make mutate).
func TestAddCountsEitherSide(t *testing.T) {
	store := openSQLite(t)
	now := time.Date(2026, 5, 5, 12, 0, 0, 0, time.UTC)
	m := New(store, Config{FlushEvery: time.Hour, Now: func() time.Time { return now }})
	ctx := context.Background()
	m.Add("nil", "acme", DoorConversation, 0, 0)
	m.Add("nil", "acme", DoorConversation, -1, -2)
	if st := m.Stats(); st.PendingKeys != 0 {
		t.Fatalf("an add of nothing left %d pending keys, want 0", st.PendingKeys)
	}
	m.Add("spk", "acme", DoorSynthesize, 0, 2)
	m.Add("hrd", "acme", DoorTranscribe, 3, 0)
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		principal     string
		rows          int
		heard, spoken float64
	}{{"spk", 1, 0, 2}, {"hrd", 1, 3, 0}, {"nil", 0, 0, 0}} {
		rows, err := store.Usage(ctx, Filter{Principal: tc.principal})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != tc.rows || tc.rows == 1 && (!near(rows[0].Heard, tc.heard) || !near(rows[0].Spoken, tc.spoken)) {
			t.Errorf("%s: rows %+v, want %d with heard %v spoken %v", tc.principal, rows, tc.rows, tc.heard, tc.spoken)
		}
	}
}
