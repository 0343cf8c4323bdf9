package meter

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/internal/testkit"
)

// readFails is a store whose reads fail with err.
type readFails struct {
	Store
	err error
}

func (r readFails) Usage(context.Context, Filter) ([]Row, error) { return nil, r.err }

// TestAdmit: a quota check answered as a refusal by name — 429 quota_exceeded over quota, 503
// meter_store_unavailable (Retry-After 1 s, logged) when the store is away and the principal's
// balance is not known, never the one for the other; a refusal from below passes as it is; any
// other failure is wrapped, not dressed as a refusal.
func TestAdmit(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 5, 5, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	var logs testkit.LogBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))

	m := New(openSQLite(t), Config{FlushEvery: time.Hour, QuotaSecondsPerDay: 10, Now: clock, Log: log})
	defer m.Close(ctx)
	if err := m.Admit(ctx, "ann"); err != nil {
		t.Fatalf("Admit with seconds left = %v, want nil", err)
	}
	m.Add("ann", "", DoorConversation, 6, 4)
	var r *door.Refusal
	if err := m.Admit(ctx, "ann"); !errors.As(err, &r) || r.Status() != http.StatusTooManyRequests || r.Name() != "quota_exceeded" {
		t.Fatalf("Admit at 10/10 = %v, want 429 quota_exceeded", err)
	}

	down := New(readFails{openSQLite(t), ErrStoreDown}, Config{QuotaSecondsPerDay: 10, Now: clock, Log: log})
	defer down.Close(ctx)
	err := down.Admit(ctx, "bob")
	if !errors.As(err, &r) || r.Status() != http.StatusServiceUnavailable || r.Name() != "meter_store_unavailable" || r.RetryAfter() != time.Second {
		t.Fatalf("Admit while the store is away = %v, want 503 meter_store_unavailable, Retry-After 1s", err)
	}
	if !strings.Contains(logs.String(), "quota unknown") || !strings.Contains(logs.String(), "subject=bob") {
		t.Errorf("the unknown quota is not logged by subject:\n%s", logs.String())
	}

	below := door.NewRefusal(http.StatusServiceUnavailable, "some_refusal", "from the store")
	passes := New(readFails{openSQLite(t), below}, Config{QuotaSecondsPerDay: 10, Now: clock, Log: log})
	defer passes.Close(ctx)
	if err := passes.Admit(ctx, "cy"); err != below {
		t.Fatalf("Admit with a refusal from the store = %v, want it as it is", err)
	}

	broken := errors.New("disk on fire")
	other := New(readFails{openSQLite(t), broken}, Config{QuotaSecondsPerDay: 10, Now: clock, Log: log})
	defer other.Close(ctx)
	err = other.Admit(ctx, "dee")
	if !errors.Is(err, broken) || errors.As(err, &r) || !strings.HasPrefix(err.Error(), "quota check: ") {
		t.Fatalf("Admit with another failure = %v, want it wrapped as quota check", err)
	}

	noQuota := New(readFails{openSQLite(t), broken}, Config{Log: log})
	defer noQuota.Close(ctx)
	if err := noQuota.Admit(ctx, "eve"); err != nil {
		t.Fatalf("Admit without a quota = %v, want nil (the store is not read)", err)
	}
}

// TestRecord: a record adds its seconds; a turn's end writes them durably at once, other records
// wait for the meter's tick.
func TestRecord(t *testing.T) {
	ctx := context.Background()
	store := openSQLite(t)
	m := New(store, Config{FlushEvery: time.Hour})
	defer m.Close(ctx)
	if err := m.Record(ctx, "fay", "acme", DoorConversation, 1.5, 0, false); err != nil {
		t.Fatal(err)
	}
	if rows, err := store.Usage(ctx, Filter{Principal: "fay"}); err != nil || len(rows) != 0 {
		t.Fatalf("a record within a turn was written at once: %v %v", rows, err)
	}
	if err := m.Record(ctx, "fay", "acme", DoorConversation, 0.5, 2, true); err != nil {
		t.Fatal(err)
	}
	rows, err := store.Usage(ctx, Filter{Principal: "fay"})
	if err != nil || len(rows) != 1 || !near(rows[0].Heard, 2) || !near(rows[0].Spoken, 2) || rows[0].Org != "acme" || rows[0].Door != DoorConversation {
		t.Fatalf("after a turn's end the store holds %+v %v, want fay/acme conversation 2 s heard, 2 s spoken", rows, err)
	}
}
