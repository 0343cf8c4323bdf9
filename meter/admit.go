package meter

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/voiced/voiced/door"
)

// The refusals Admit answers with, by name.
var (
	// refuseQuota: the principal's daily seconds are used up (429).
	refuseQuota = door.NewRefusal(http.StatusTooManyRequests, "quota_exceeded", "this principal's daily seconds are used up")
	// refuseStoreDown: the store cannot be read and the principal's balance is not known (503).
	refuseStoreDown = door.NewRefusal(http.StatusServiceUnavailable, "meter_store_unavailable",
		"the usage store is unavailable and this principal's balance is not known; retry shortly").WithRetryAfter(time.Second)
)

// Admit is the quota check a door asks before it opens a conversation for principal, answered
// as a refusal by name: 429 quota_exceeded when the principal's daily seconds are used up; 503
// meter_store_unavailable when the store cannot be read and the meter has no recent balance of
// the principal (Config.QuotaStaleAfter: one that has goes on, counted from that balance). Never
// the one for the other: an outage is not an overdraft. Any other failure is returned wrapped.
func (m *Meter) Admit(ctx context.Context, principal string) error {
	err := m.CheckQuota(ctx, principal)
	var r *door.Refusal
	switch {
	case err == nil:
		return nil
	case errors.As(err, &r):
		return r
	case errors.Is(err, ErrQuotaExceeded):
		return refuseQuota
	case errors.Is(err, ErrStoreDown):
		m.cfg.Log.Error("quota unknown: the meter store is away and this principal has no recent balance", "err", err, "subject", principal)
		return refuseStoreDown
	default:
		return fmt.Errorf("quota check: %w", err)
	}
}

// Record adds a conversation's seconds (Add) and, at a turn's end, writes them durably now
// (Sync: one shared write, none while the store is away) rather than at the next tick.
func (m *Meter) Record(ctx context.Context, principal, org, door string, heard, spoken float64, turnEnded bool) error {
	m.Add(principal, org, door, heard, spoken)
	if turnEnded {
		return m.Sync(ctx)
	}
	return nil
}
