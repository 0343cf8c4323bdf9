package meter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/voiced/voiced/internal/testkit"
)

func openSQLite(t *testing.T) *SQL {
	t.Helper()
	s, err := OpenSQLite(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// stores returns the stores to run against: SQLite always, Postgres when VOICED_TEST_POSTGRES_DSN is set
// (.ci/run starts a real server and sets it).
func stores(t *testing.T) map[string]Store {
	out := map[string]Store{"sqlite": openSQLite(t)}
	if dsn := os.Getenv("VOICED_TEST_POSTGRES_DSN"); dsn != "" {
		pg, err := OpenPostgres(context.Background(), dsn)
		if err != nil {
			t.Fatalf("postgres at VOICED_TEST_POSTGRES_DSN: %v", err)
		}
		// Each test uses principals of its own name, so runs don't see each other's rows.
		t.Cleanup(func() { pg.Close() })
		out["postgres"] = pg
	} else {
		t.Log("VOICED_TEST_POSTGRES_DSN unset: Postgres store not exercised here")
	}
	return out
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestStoreAddsAndFilters(t *testing.T) {
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			p := "alice-" + t.Name() + time.Now().Format("150405.000000")
			d1 := time.Date(2026, 3, 1, 23, 59, 0, 0, time.UTC)
			d2 := d1.Add(2 * time.Minute) // next UTC day
			if err := s.Add(ctx, []Record{
				{Principal: p, Org: "acme", Door: DoorConversation, At: d1, Heard: 1.5, Spoken: 2},
				{Principal: p, Org: "acme", Door: DoorConversation, At: d1, Heard: 0.5},
				{Principal: p, Org: "acme", Door: DoorTranscribe, At: d2, Heard: 3},
				{Principal: p + "-bob", Org: "other", Door: DoorSynthesize, At: d2, Spoken: 4},
			}); err != nil {
				t.Fatal(err)
			}
			rows, err := s.Usage(ctx, Filter{Principal: p})
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != 2 || rows[0].Day != "2026-03-01" || !near(rows[0].Heard, 2) || !near(rows[0].Spoken, 2) || rows[1].Day != "2026-03-02" || !near(rows[1].Heard, 3) {
				t.Fatalf("rows = %+v", rows)
			}
			rows, _ = s.Usage(ctx, Filter{Principal: p, From: d2, To: d2})
			if len(rows) != 1 || rows[0].Door != DoorTranscribe {
				t.Fatalf("day filter rows = %+v", rows)
			}
			rows, _ = s.Usage(ctx, Filter{Org: "other", Principal: p + "-bob"})
			if len(rows) != 1 || !near(rows[0].Spoken, 4) {
				t.Fatalf("org filter rows = %+v", rows)
			}
		})
	}
}

func TestMigrationsAreIdempotent(t *testing.T) {
	dir := t.TempDir()
	for i := 0; i < 2; i++ {
		s, err := OpenSQLite(context.Background(), dir)
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		s.Close()
	}
}

// flaky is a store that refuses writes while down, as a Postgres that went away would.
type flaky struct {
	Store
	mu   sync.Mutex
	down bool
}

func (f *flaky) Add(ctx context.Context, recs []Record) error {
	f.mu.Lock()
	down := f.down
	f.mu.Unlock()
	if down {
		return errors.New("connection refused")
	}
	return f.Store.Add(ctx, recs)
}

// Usage refuses reads while down, as a Postgres that went away would.
func (f *flaky) Usage(ctx context.Context, filter Filter) ([]Row, error) {
	f.mu.Lock()
	down := f.down
	f.mu.Unlock()
	if down {
		return nil, fmt.Errorf("%w: usage: connection refused", ErrStoreDown)
	}
	return f.Store.Usage(ctx, filter)
}

func (f *flaky) setDown(down bool) {
	f.mu.Lock()
	f.down = down
	f.mu.Unlock()
}

// TestQuotaWhileStoreAway: while the store cannot be read, a principal whose balance was read
// within QuotaStaleAfter today is answered from that read plus what this meter wrote and holds
// since (it may go on, and is still refused at its quota); a principal never read, or read too
// long ago, is refused by name (ErrStoreDown), not as over quota.
func TestQuotaWhileStoreAway(t *testing.T) {
	now := time.Date(2026, 5, 5, 12, 0, 0, 0, time.UTC)
	store := &flaky{Store: openSQLite(t)}
	m := New(store, Config{FlushEvery: time.Hour, QuotaSecondsPerDay: 10, QuotaStaleAfter: 10 * time.Minute,
		Now: func() time.Time { return now }})
	ctx := context.Background()
	defer func() { // bounded: a store left down would keep Close retrying
		closeCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		store.setDown(false)
		m.Close(closeCtx)
	}()
	m.Add("known", "", DoorConversation, 2, 0)
	if err := m.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if left, err := m.Remaining(ctx, "known"); err != nil || !near(left, 8) { // the balance is read: 2 used
		t.Fatalf("Remaining = %v %v, want 8", left, err)
	}
	m.Add("known", "", DoorConversation, 1, 1) // written after the read: the meter adds what lands
	if err := m.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	store.setDown(true)
	m.Add("known", "", DoorConversation, 1, 0) // pending while away
	if left, err := m.Remaining(ctx, "known"); err != nil || !near(left, 5) {
		t.Fatalf("Remaining while away = %v %v, want 5 (read 2 + written 2 + pending 1)", left, err)
	}
	if err := m.CheckQuota(ctx, "known"); err != nil {
		t.Fatalf("CheckQuota of a known principal while away = %v, want nil", err)
	}
	m.Add("known", "", DoorConversation, 5, 0)
	if err := m.CheckQuota(ctx, "known"); !errors.Is(err, ErrQuotaExceeded) {
		t.Fatalf("CheckQuota at 10/10 while away = %v, want ErrQuotaExceeded", err)
	}
	if err := m.CheckQuota(ctx, "stranger"); !errors.Is(err, ErrStoreDown) || errors.Is(err, ErrQuotaExceeded) {
		t.Fatalf("CheckQuota of a principal never read while away = %v, want ErrStoreDown", err)
	}
	now = now.Add(11 * time.Minute) // the read is now too old to stand for the store
	if _, err := m.Remaining(ctx, "known"); !errors.Is(err, ErrStoreDown) {
		t.Fatalf("Remaining with a stale read while away = %v, want ErrStoreDown", err)
	}

	store.setDown(false)
	if err := m.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if left, err := m.Remaining(ctx, "known"); err != nil || left != 0 {
		t.Fatalf("Remaining after the store is back = %v %v, want 0 (10 used)", left, err)
	}
}

func TestMeterKeepsCountsWhileStoreIsDown(t *testing.T) {
	store := &flaky{Store: openSQLite(t), down: true}
	now := time.Date(2026, 5, 5, 12, 0, 0, 0, time.UTC)
	m := New(store, Config{FlushEvery: time.Hour, Now: func() time.Time { return now }})
	ctx := context.Background()
	m.Add("carol", "acme", DoorConversation, 1.25, 0.75)
	err := m.Flush(ctx)
	if !errors.Is(err, ErrStoreDown) {
		t.Fatalf("Flush while down = %v, want ErrStoreDown", err)
	}
	if st := m.Stats(); st.FailedWrites != 1 || st.StoreHealthy || st.PendingKeys != 1 || st.LastError == "" {
		t.Fatalf("stats while down = %+v", st)
	}
	m.Add("carol", "acme", DoorConversation, 1, 0)
	store.mu.Lock()
	store.down = false
	store.mu.Unlock()
	if err := m.Close(ctx); err != nil {
		t.Fatalf("Close after recovery: %v", err)
	}
	rows, _ := store.Usage(ctx, Filter{Principal: "carol"})
	if len(rows) != 1 || !near(rows[0].Heard, 2.25) || !near(rows[0].Spoken, 0.75) {
		t.Fatalf("after catch-up rows = %+v", rows)
	}
}

func TestQuota(t *testing.T) {
	now := time.Date(2026, 5, 5, 12, 0, 0, 0, time.UTC)
	m := New(openSQLite(t), Config{FlushEvery: time.Hour, QuotaSecondsPerDay: 10, Now: func() time.Time { return now }})
	defer m.Close(context.Background())
	ctx := context.Background()
	if left, _ := m.Remaining(ctx, "dave"); left != 10 {
		t.Fatalf("remaining fresh = %v", left)
	}
	m.Add("dave", "", DoorConversation, 4, 2) // pending counts too
	if left, _ := m.Remaining(ctx, "dave"); !near(left, 4) {
		t.Fatalf("remaining after 6 s pending = %v", left)
	}
	m.Flush(ctx)
	m.Add("dave", "", DoorConversation, 4, 0)
	if err := m.CheckQuota(ctx, "dave"); !errors.Is(err, ErrQuotaExceeded) {
		t.Fatalf("CheckQuota at 10/10 = %v", err)
	}
	now = now.Add(24 * time.Hour) // a new UTC day starts fresh
	if err := m.CheckQuota(ctx, "dave"); err != nil {
		t.Fatalf("next day CheckQuota = %v", err)
	}
	noQuota := New(openSQLite(t), Config{})
	defer noQuota.Close(ctx)
	if left, _ := noQuota.Remaining(ctx, "x"); left != -1 {
		t.Fatalf("no quota remaining = %v", left)
	}
}

// Budget is Remaining as a duration, and says whether there is a quota.
func TestBudget(t *testing.T) {
	now := time.Date(2026, 5, 5, 12, 0, 0, 0, time.UTC)
	ctx := context.Background()
	m := New(openSQLite(t), Config{FlushEvery: time.Hour, QuotaSecondsPerDay: 10, Now: func() time.Time { return now }})
	defer m.Close(ctx)
	m.Add("erin", "", DoorConversation, 2.5, 1)
	if left, limited, err := m.Budget(ctx, "erin"); err != nil || !limited || left != 6500*time.Millisecond {
		t.Fatalf("Budget = %v %v %v, want 6.5s limited", left, limited, err)
	}
	noQuota := New(openSQLite(t), Config{})
	defer noQuota.Close(ctx)
	if left, limited, err := noQuota.Budget(ctx, "erin"); err != nil || limited || left != 0 {
		t.Fatalf("Budget without a quota = %v %v %v, want 0 unlimited", left, limited, err)
	}
}

func TestUsageHandler(t *testing.T) {
	now := time.Date(2026, 5, 5, 12, 0, 0, 0, time.UTC)
	store := openSQLite(t)
	m := New(store, Config{FlushEvery: time.Hour, Now: func() time.Time { return now }})
	defer m.Close(context.Background())
	store.Add(context.Background(), []Record{
		{Principal: "erin", Org: "acme", Door: DoorConversation, At: now, Heard: 2, Spoken: 3},
		{Principal: "erin", Org: "acme", Door: DoorSynthesize, At: now, Spoken: 1},
		{Principal: "erin", Org: "acme", Door: DoorConversation, At: now.AddDate(0, 0, -40), Heard: 9},
	})
	cases := []struct {
		name, query   string
		status        int
		heard, spoken float64
	}{
		{"all", "", 200, 11, 4},
		{"today", "?period=day", 200, 2, 4},
		{"range", "?from=2026-03-01&to=2026-03-31", 200, 9, 0},
		{"principal", "?principal=nobody", 200, 0, 0},
		{"bad date", "?from=yesterday", 400, 0, 0},
		{"bad period", "?period=year", 400, 0, 0},
		{"inverted", "?from=2026-05-05&to=2026-05-01", 400, 0, 0},
	}
	h := m.UsageHandler()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/usage"+c.query, nil))
			if rec.Code != c.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, c.status, rec.Body)
			}
			if c.status != 200 {
				return
			}
			var rep UsageReport
			if err := json.Unmarshal(rec.Body.Bytes(), &rep); err != nil {
				t.Fatal(err)
			}
			if !near(rep.HeardSeconds, c.heard) || !near(rep.SpokenSeconds, c.spoken) {
				t.Fatalf("report %+v, want heard %v spoken %v", rep, c.heard, c.spoken)
			}
		})
	}
}

// A Postgres that is down at start refuses the meter by name, so the server refuses to start.
func TestOpenPostgresDownRefusesByName(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := OpenPostgres(ctx, "postgres://voiced:voiced@127.0.0.1:1/none?sslmode=disable&connect_timeout=2")
	if !errors.Is(err, ErrStoreDown) {
		t.Fatalf("OpenPostgres on a closed port = %v, want ErrStoreDown", err)
	}
}

// TestCloseWaitsForLastWriters: a writer that holds the meter (a conversation still running when
// the server stops) records after Close began; Close waits for it (bounded) and writes its
// usage. A writer that outlives the bound records after the close: its seconds are counted lost
// by name (metric + log), never dropped silently.
func TestCloseWaitsForLastWriters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := openSQLite(t)
		var logs testkit.LogBuffer
		m := New(store, Config{FlushEvery: time.Hour, CloseWait: 30 * time.Second,
			Log: slog.New(slog.NewJSONHandler(&logs, nil))})
		ctx := context.Background()
		release := m.Hold()
		closed := make(chan error, 1)
		go func() { closed <- m.Close(ctx) }()
		// The writer records while Close waits for it, then lets go.
		synctest.Wait() // Close is blocked, waiting for the writer
		if !m.Stats().Closing {
			t.Fatal("Close is waiting and the meter does not say it is closing")
		}
		select {
		case err := <-closed:
			t.Fatalf("Close returned (%v) while a writer still held the meter", err)
		default:
		}
		m.Add("late", "acme", DoorConversation, 1.5, 2.5)
		release()
		release() // idempotent
		if err := <-closed; err != nil {
			t.Fatalf("Close: %v", err)
		}
		rows, _ := store.Usage(ctx, Filter{Principal: "late"})
		if len(rows) != 1 || !near(rows[0].Heard, 1.5) || !near(rows[0].Spoken, 2.5) {
			t.Fatalf("a writer's usage recorded while Close waited for it: rows = %+v", rows)
		}

		// Past the bound: Close returns; what the stuck writer records later is counted lost.
		m2 := New(store, Config{FlushEvery: time.Hour, CloseWait: 50 * time.Millisecond,
			Log: slog.New(slog.NewJSONHandler(&logs, nil))})
		stuck := m2.Hold()
		if err := m2.Close(ctx); err != nil {
			t.Fatalf("Close with a stuck writer: %v", err)
		}
		m2.Add("stuck", "acme", DoorConversation, 0.75, 1.25)
		stuck()
		if got := counterValue(t, m2.metrics.lost.WithLabelValues(DoorConversation, LostClosed)); !near(got, 2) {
			t.Errorf("voiced_meter_lost_seconds_total{reason=%q} = %v, want 2", LostClosed, got)
		}
		if !strings.Contains(logs.String(), `"principal":"stuck"`) || !strings.Contains(logs.String(), "meter usage lost") {
			t.Errorf("the lost usage is not logged by name:\n%s", logs.String())
		}
		if rows, _ := store.Usage(ctx, Filter{Principal: "stuck"}); len(rows) != 0 {
			t.Errorf("usage recorded after Close reached the store anyway: %+v", rows)
		}
	})
}

// counterValue reads a counter's value.
func counterValue(t *testing.T, c interface{ Write(*dto.Metric) error }) float64 {
	t.Helper()
	var d dto.Metric
	if err := c.Write(&d); err != nil {
		t.Fatal(err)
	}
	return d.GetCounter().GetValue()
}

// answerLost is a store whose first write lands but reports failure, as when the connection to
// Postgres drops after COMMIT was sent.
type answerLost struct {
	*SQL
	mu    sync.Mutex
	fails int
}

func (a *answerLost) AddOnce(ctx context.Context, writer string, seq uint64, recs []Record) error {
	if err := a.SQL.AddOnce(ctx, writer, seq, recs); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.fails > 0 {
		a.fails--
		return errors.New("connection reset after COMMIT")
	}
	return nil
}

// TestRetryOfALandedWriteCountsOnce: a write that landed but whose answer was lost is retried as
// the same batch, and the store applies it once (TestFaultsPostgresAway found spoken seconds
// counted twice when the link dropped mid-commit).
func TestRetryOfALandedWriteCountsOnce(t *testing.T) {
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			sql := s.(*SQL)
			store := &answerLost{SQL: sql, fails: 1}
			p := "once-" + name + time.Now().Format("150405.000000")
			m := New(store, Config{FlushEvery: time.Hour})
			ctx := context.Background()
			m.Add(p, "acme", DoorConversation, 1, 2)
			if err := m.Flush(ctx); !errors.Is(err, ErrStoreDown) {
				t.Fatalf("first Flush = %v, want ErrStoreDown", err)
			}
			m.Add(p, "acme", DoorConversation, 0.5, 0)
			if err := m.Close(ctx); err != nil {
				t.Fatal(err)
			}
			rows, _ := sql.Usage(ctx, Filter{Principal: p})
			if len(rows) != 1 || !near(rows[0].Heard, 1.5) || !near(rows[0].Spoken, 2) {
				t.Fatalf("rows = %+v, want heard 1.5 spoken 2 (the landed batch once)", rows)
			}
		})
	}
}

// TestPendingIsBounded: while the store is away, counts for at most MaxPendingKeys keys are kept;
// seconds for a new key past it are counted lost by name, and kept keys keep adding.
func TestPendingIsBounded(t *testing.T) {
	store := &flaky{Store: openSQLite(t), down: true}
	var logs testkit.LogBuffer
	m := New(store, Config{FlushEvery: time.Hour, MaxPendingKeys: 2, CloseWait: time.Millisecond,
		Log: slog.New(slog.NewJSONHandler(&logs, nil))})
	m.Add("a", "", DoorConversation, 1, 0)
	m.Flush(context.Background()) // fails: a's batch kept for its retry
	m.Add("b", "", DoorConversation, 1, 0)
	m.Add("c", "", DoorConversation, 1, 0.5) // past the bound
	m.Add("a", "", DoorConversation, 1, 0)   // a kept key keeps adding
	if got := counterValue(t, m.metrics.lost.WithLabelValues(DoorConversation, LostPendingFull)); !near(got, 1.5) {
		t.Errorf("lost pending_full = %v, want 1.5", got)
	}
	if !strings.Contains(logs.String(), `"principal":"c"`) {
		t.Errorf("the lost key is not logged by name:\n%s", logs.String())
	}
	store.mu.Lock()
	store.down = false
	store.mu.Unlock()
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]float64{"a": 2, "b": 1} {
		if rows, _ := store.Usage(context.Background(), Filter{Principal: p}); len(rows) != 1 || !near(rows[0].Heard, want) {
			t.Errorf("%s: rows = %+v, want heard %v", p, rows, want)
		}
	}
}

// Sums of per-chunk seconds carry float noise (0.1+0.2); the report rounds it to the microsecond
// at every level, and the totals still agree with the doors'.
func TestReportRoundsFloatNoise(t *testing.T) {
	rows := []Row{
		{Principal: "service", Day: "2026-12-03", Door: "transcribe", Heard: 0.1},
		{Principal: "service", Day: "2026-12-03", Door: "synthesize", Heard: 0.2, Spoken: 1.0 / 3},
	}
	rep := Report(Filter{}, rows)
	if rep.HeardSeconds != 0.3 || rep.Principals[0].HeardSeconds != 0.3 || rep.Principals[0].Days[0].HeardSeconds != 0.3 {
		t.Fatalf("heard = %v / %v / %v, want 0.3 at every level", rep.HeardSeconds, rep.Principals[0].HeardSeconds, rep.Principals[0].Days[0].HeardSeconds)
	}
	if got := rep.Principals[0].Days[0].Doors["synthesize"].SpokenSeconds; got != 0.333333 {
		t.Fatalf("door spoken = %v, want 0.333333", got)
	}
}
