package meter

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Config says how often counts are written and what a principal may use.
type Config struct {
	// FlushEvery bounds what a crash can lose: counts are written at least this often (default 1 s).
	FlushEvery time.Duration
	// QuotaSecondsPerDay caps heard+spoken seconds per principal per UTC day; 0 means no quota.
	QuotaSecondsPerDay float64
	// Now is the clock (default time.Now); tests pass their own.
	Now func() time.Time
	Log *slog.Logger
	// CloseWait bounds how long Close waits for writers that still hold the meter (Hold) before
	// it writes what is pending (default 10 s). Seconds a writer adds after the close are counted
	// lost (voiced_meter_lost_seconds_total{reason="closed"}) and logged by principal.
	CloseWait time.Duration
	// MaxPendingKeys bounds the counts kept in memory while the store is away: principal/org/door/
	// day keys (≈ 200 bytes each; the default 100 000 ≈ 20 MiB). Seconds for a new key past it are
	// counted lost (reason "pending_full") and logged by principal; keys already kept keep adding.
	MaxPendingKeys int
	// QuotaStaleAfter bounds how old a principal's last read of the store may be for quota to be
	// answered from it while the store cannot be read (default 15 min): that read, plus what this
	// meter wrote and holds for the principal since. A principal with no such read today is
	// refused by name (ErrStoreDown). 0 takes the default; a negative value never answers from a
	// past read (quota fails closed while the store is away).
	QuotaStaleAfter time.Duration
	// SyncEvery is the least time between the starts of two group commits (Sync): callers of
	// Sync from every conversation wait on one shared write, made at once when the last one
	// started SyncEvery ago or more, else when it has (default 10 ms; negative: no wait, a write
	// as soon as the one in flight is done). It bounds the commits a second (1/SyncEvery) however
	// many conversations meter, and adds at most SyncEvery to a Sync under load.
	SyncEvery time.Duration
}

// defaultSyncEvery is SyncEvery's default: at most 100 commits a second, a Sync waits ≤ 10 ms more.
const defaultSyncEvery = 10 * time.Millisecond

// Why seconds were lost (the reason label of voiced_meter_lost_seconds_total).
const (
	LostClosed      = "closed"       // added after Close returned (a writer outlived CloseWait)
	LostPendingFull = "pending_full" // a new key while MaxPendingKeys were kept (store away long)
	LostStoreDown   = "store_down"   // still pending when Close's final write gave up
)

// maxRetryWait caps the backoff between writes while the store refuses them.
const maxRetryWait = 5 * time.Second

type key struct{ principal, org, door, day string }

type counts struct{ heard, spoken float64 }

// balance is what the store held for a principal on day when it was read at read, plus what this
// meter has written for the principal since (quota answers from it while the store is away).
type balance struct {
	day    string
	stored float64
	read   time.Time
}

// Meter accumulates seconds in memory and writes them to its Store at every Flush (a turn's end)
// and at least every FlushEvery, in one transaction per write. A write that fails keeps its
// counts and is retried on the next tick: metering catches up when the store returns, and the
// failure is reported by name (log, Stats, ErrStoreDown from Flush) — never dropped silently.
type Meter struct {
	cfg   Config
	store Store

	mu      sync.Mutex
	pending map[key]counts     // owned by mu: counts not yet in the store
	failed  int                // owned by mu: consecutive failed writes
	lastErr error              // owned by mu
	closing bool               // owned by mu: Close began (it waits for holders)
	closed  bool               // owned by mu: Close's final write began; Add counts seconds lost
	holders int                // owned by mu: writers that hold the meter (Hold)
	idle    chan struct{}      // owned by mu: closed when holders reach 0 while closing
	unsent  *batch             // owned by mu, written under writeMu: the batch being written or to retry as is
	seq     uint64             // owned by mu: the last batch's number (this meter's batches are numbered 1, 2, …)
	next    *commit            // owned by mu: the group commit Sync callers wait on (nil: none asked)
	direct  bool               // owned by mu: the committer stopped (Close): Sync writes itself
	landed  uint64             // owned by mu: writes that landed (a read that saw none land in its course is exact)
	known   map[string]balance // owned by mu: each principal's last read of the store, for quota while it is away

	metrics *metrics

	writer string // this meter's name in the store's batch table (Idempotent)

	writeMu    sync.Mutex    // one write at a time keeps pending/store consistent
	wake       chan struct{} // cap 1: a Sync asks the committer for a write
	stop       chan struct{}
	done       chan struct{} // loop ended
	commitDone chan struct{} // committer ended
}

// commit is one group commit: every Sync that joined it before it began waits on done and
// reads err after.
type commit struct {
	done chan struct{}
	err  error
}

// Stats is the meter's health.
type Stats struct {
	PendingKeys  int    `json:"pendingKeys"`
	FailedWrites int    `json:"failedWrites"`
	LastError    string `json:"lastError,omitempty"`
	StoreHealthy bool   `json:"storeHealthy"`
	Writers      int    `json:"writers"` // writers holding the meter
	Closing      bool   `json:"closing"`
}

// New starts a meter on store; Close stops it and writes what is pending.
func New(store Store, cfg Config) *Meter {
	if cfg.FlushEvery <= 0 {
		cfg.FlushEvery = time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.CloseWait <= 0 {
		cfg.CloseWait = 10 * time.Second
	}
	if cfg.MaxPendingKeys <= 0 {
		cfg.MaxPendingKeys = 100_000
	}
	if cfg.QuotaStaleAfter == 0 {
		cfg.QuotaStaleAfter = 15 * time.Minute
	}
	switch {
	case cfg.SyncEvery == 0:
		cfg.SyncEvery = defaultSyncEvery
	case cfg.SyncEvery < 0:
		cfg.SyncEvery = 0
	}
	m := &Meter{cfg: cfg, store: store, pending: map[key]counts{}, known: map[string]balance{},
		writer: newBatchID(), wake: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{}), commitDone: make(chan struct{})}
	m.metrics = newMetrics(m)
	go m.loop()
	go m.committer()
	return m
}

// committer is the meter's one group-commit writer: it waits for a Sync to ask, waits until
// SyncEvery has passed since the last commit began, then writes everything pending (every
// conversation's) in one transaction and releases all the callers that joined before it
// began. At Close it writes once more for any caller still waiting, and from then on Sync
// writes itself.
func (m *Meter) committer() {
	defer close(m.commitDone)
	var last time.Time // when the last commit began
	for {
		select {
		case <-m.stop:
			m.stopCommitting()
			return
		case <-m.wake:
		}
		if wait := m.cfg.SyncEvery - time.Since(last); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-m.stop:
				t.Stop()
				m.stopCommitting()
				return
			case <-t.C:
			}
		}
		m.mu.Lock()
		c := m.next
		m.next = nil
		m.mu.Unlock()
		if c == nil {
			continue
		}
		last = time.Now()
		m.commitNow(c)
	}
}

// commitNow writes what is pending for c's callers (and everything else pending) and releases them.
func (m *Meter) commitNow(c *commit) {
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	c.err = m.Flush(ctx)
	cancel()
	close(c.done)
}

// commitTimeout bounds one group commit (a caller's own context bounds its wait).
const commitTimeout = 5 * time.Second

// stopCommitting hands Sync to its callers (direct) and writes for those still waiting.
func (m *Meter) stopCommitting() {
	m.mu.Lock()
	c := m.next
	m.next = nil
	m.direct = true
	m.mu.Unlock()
	if c != nil {
		m.commitNow(c)
	}
}

// loop writes every FlushEvery; while the store refuses, it waits twice as long after each failed
// write, up to maxRetryWait (counts are kept meanwhile), and back to FlushEvery once one lands.
func (m *Meter) loop() {
	defer close(m.done)
	wait := m.cfg.FlushEvery
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := m.Flush(ctx)
		cancel()
		if err != nil {
			wait = min(2*wait, max(maxRetryWait, m.cfg.FlushEvery))
		} else {
			wait = m.cfg.FlushEvery
		}
		t.Reset(wait)
	}
}

// Hold registers a writer that will Add until it calls release (idempotent): Close waits for
// every holder, up to CloseWait, before its final write. A conversation holds the meter from its
// start to its last record, so one still running when the server stops is not cut off.
func (m *Meter) Hold() (release func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closing {
		return func() {} // Close is not waiting for it; its Adds land until the final write, then count lost
	}
	m.holders++
	var once sync.Once
	return func() {
		once.Do(func() {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.holders--
			if m.holders == 0 && m.idle != nil {
				close(m.idle)
				m.idle = nil
			}
		})
	}
}

// Add counts seconds heard and spoken for a principal at a door. It never blocks on the store.
func (m *Meter) Add(principal, org, door string, heard, spoken float64) {
	if heard <= 0 && spoken <= 0 {
		return
	}
	heard, spoken = max(heard, 0), max(spoken, 0)
	m.metrics.heard.WithLabelValues(door).Add(heard)
	m.metrics.spoken.WithLabelValues(door).Add(spoken)
	k := key{principal, org, door, Day(m.cfg.Now())}
	m.mu.Lock()
	c, kept := m.pending[k]
	if !kept && m.unsent != nil {
		_, kept = m.unsent.counts[k] // a key being retried takes no new room
	}
	lost := ""
	switch {
	case m.closed:
		lost = LostClosed
	case !kept && len(m.pending)+m.unsent.keys() >= m.cfg.MaxPendingKeys:
		lost = LostPendingFull
	default:
		c.heard += heard
		c.spoken += spoken
		m.pending[k] = c
	}
	m.mu.Unlock()
	if lost != "" {
		m.lose(k, counts{heard, spoken}, lost)
	}
}

// lose counts seconds that will never reach the store, by door and reason, and logs them by name.
func (m *Meter) lose(k key, c counts, reason string) {
	m.metrics.lost.WithLabelValues(k.door, reason).Add(c.heard + c.spoken)
	m.cfg.Log.Error("meter usage lost", "reason", reason, "principal", k.principal, "org", k.org,
		"door", k.door, "day", k.day, "heardSeconds", c.heard, "spokenSeconds", c.spoken)
}

// Sync returns when what was added before it is durable: it joins the next group commit, which
// the committer writes for every caller at once (at most one each SyncEvery), carrying all that
// is pending. While the store refuses (a write failed and none landed since) it returns
// ErrStoreDown at once without writing: the loop retries with backoff, and a caller serving audio
// is never held up by a store that is away. When ctx ends first it returns ctx's error (wrapped
// in ErrStoreDown); the write goes on.
func (m *Meter) Sync(ctx context.Context) error {
	m.mu.Lock()
	if m.failed > 0 {
		m.mu.Unlock()
		return ErrStoreDown
	}
	if m.direct {
		m.mu.Unlock()
		return m.Flush(ctx)
	}
	c := m.next
	if c == nil {
		c = &commit{done: make(chan struct{})}
		m.next = c
	}
	m.mu.Unlock()
	select {
	case m.wake <- struct{}{}:
	default:
	}
	select {
	case <-c.done:
		return c.err
	case <-ctx.Done():
		return fmt.Errorf("%w: waiting for the write: %w", ErrStoreDown, context.Cause(ctx))
	}
}

// batch is counts handed to the store under this meter's writer name and a number: a write whose
// outcome is unknown (the connection dropped after COMMIT was sent) is retried with the same
// number, and a store that can (Idempotent) applies it once. Batches are written in order, each
// only after the one before landed.
type batch struct {
	seq    uint64
	counts map[key]counts
}

func (b *batch) keys() int {
	if b == nil {
		return 0
	}
	return len(b.counts)
}

func newBatchID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Idempotent is a Store that applies a writer's batch once: a retry of a write that did land is a
// no-op. A writer numbers its batches 1, 2, … and writes each only after the one before landed,
// so the store keeps one row per writer (its last number), not one per batch.
type Idempotent interface {
	AddOnce(ctx context.Context, writer string, seq uint64, recs []Record) error
}

// Flush writes the pending counts in one transaction: first a batch that failed before, as it
// was (same id), then what is pending. On failure the counts stay (the failed batch kept whole
// for its retry) and the error (wrapping ErrStoreDown) is returned and kept for Stats.
func (m *Meter) Flush(ctx context.Context) error {
	m.writeMu.Lock()
	defer m.writeMu.Unlock()
	for range 2 { // a kept batch, then what is pending
		m.mu.Lock()
		b := m.unsent
		kept := b != nil
		if b == nil && len(m.pending) > 0 {
			m.seq++
			b = &batch{seq: m.seq, counts: m.pending}
			m.pending = map[key]counts{}
			m.unsent = b
		}
		m.mu.Unlock()
		if b == nil {
			return nil
		}
		if err := m.write(ctx, b); err != nil {
			return err
		}
		if !kept {
			return nil // what was added during the write is the next write's (one write per commit)
		}
	}
	return nil
}

func (m *Meter) write(ctx context.Context, b *batch) error {
	recs := make([]Record, 0, len(b.counts))
	for k, c := range b.counts {
		at, _ := time.Parse(time.DateOnly, k.day)
		recs = append(recs, Record{Principal: k.principal, Org: k.org, Door: k.door, At: at, Heard: c.heard, Spoken: c.spoken})
	}
	var err error
	if once, ok := m.store.(Idempotent); ok {
		err = once.AddOnce(ctx, m.writer, b.seq, recs)
	} else {
		err = m.store.Add(ctx, recs)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil { // the batch stays unsent: nothing paid for is lost, nothing counted twice
		m.failed++
		m.lastErr = err
		m.metrics.writeFailures.Inc()
		m.cfg.Log.Error("meter write failed; counts kept and retried", "err", err, "failedWrites", m.failed,
			"pendingKeys", len(m.pending)+len(b.counts))
		if !errors.Is(err, ErrStoreDown) {
			err = fmt.Errorf("%w: %v", ErrStoreDown, err)
		}
		return err
	}
	m.unsent = nil
	m.landed++
	for k, c := range b.counts {
		if kb, ok := m.known[k.principal]; ok && kb.day == k.day {
			kb.stored += c.heard + c.spoken
			m.known[k.principal] = kb
		}
	}
	if m.failed > 0 {
		m.cfg.Log.Info("meter caught up", "afterFailedWrites", m.failed)
	}
	m.failed, m.lastErr = 0, nil
	return nil
}

// Used returns the seconds (heard+spoken) a principal has used today: what the store holds for
// today plus what is pending here. While the store cannot be read, a read of this principal made
// today within QuotaStaleAfter stands for it (plus what this meter wrote since); with none the
// error wraps ErrStoreDown.
func (m *Meter) Used(ctx context.Context, principal string) (float64, error) {
	now := m.cfg.Now()
	day := Day(now)
	m.mu.Lock()
	landed := m.landed
	m.mu.Unlock()
	rows, err := m.store.Usage(ctx, Filter{Principal: principal, From: now, To: now})
	total := 0.0
	for _, r := range rows {
		total += r.Heard + r.Spoken
	}
	m.mu.Lock()
	switch kb, ok := m.known[principal]; {
	case err == nil && m.landed == landed: // no write landed while it read: the figure is exact
		m.remember(principal, balance{day: day, stored: total, read: now})
	case err == nil:
	case errors.Is(err, ErrStoreDown) && ok && kb.day == day && m.cfg.QuotaStaleAfter > 0 && now.Sub(kb.read) <= m.cfg.QuotaStaleAfter:
		total = kb.stored
	default:
		m.mu.Unlock()
		if errors.Is(err, ErrStoreDown) {
			return 0, fmt.Errorf("%w: no balance of %s read in the last %s", err, principal, m.cfg.QuotaStaleAfter)
		}
		return 0, err
	}
	for _, kept := range []map[key]counts{m.pending, m.unsentCounts()} {
		for k, c := range kept {
			if k.principal == principal && k.day == day {
				total += c.heard + c.spoken
			}
		}
	}
	m.mu.Unlock()
	return total, nil
}

// remember keeps a principal's read; mu held. The reads kept are bounded by MaxPendingKeys: past
// it, the ones too old to stand for the store are dropped, and if none is, this one is not kept.
func (m *Meter) remember(principal string, b balance) {
	if _, ok := m.known[principal]; !ok && len(m.known) >= m.cfg.MaxPendingKeys {
		for p, kb := range m.known {
			if kb.day != b.day || b.read.Sub(kb.read) > m.cfg.QuotaStaleAfter {
				delete(m.known, p)
			}
		}
		if len(m.known) >= m.cfg.MaxPendingKeys {
			return
		}
	}
	m.known[principal] = b
}

// unsentCounts is the kept batch's counts (nil when none); mu held.
func (m *Meter) unsentCounts() map[key]counts {
	if m.unsent == nil {
		return nil
	}
	return m.unsent.counts
}

// Remaining returns the seconds a principal may still use today, or -1 when there is no quota.
func (m *Meter) Remaining(ctx context.Context, principal string) (float64, error) {
	if m.cfg.QuotaSecondsPerDay <= 0 {
		return -1, nil
	}
	used, err := m.Used(ctx, principal)
	if err != nil {
		return 0, err
	}
	left := m.cfg.QuotaSecondsPerDay - used
	if left < 0 {
		left = 0
	}
	return left, nil
}

// Budget is Remaining as a conversation counts it down: the time left today and whether the
// principal has a quota at all (limited false: no quota, left 0).
func (m *Meter) Budget(ctx context.Context, principal string) (left time.Duration, limited bool, err error) {
	secs, err := m.Remaining(ctx, principal)
	if err != nil || secs < 0 {
		return 0, false, err
	}
	return time.Duration(secs * float64(time.Second)), true, nil
}

// CheckQuota refuses with ErrQuotaExceeded when the principal has nothing left today.
func (m *Meter) CheckQuota(ctx context.Context, principal string) error {
	left, err := m.Remaining(ctx, principal)
	if err != nil {
		return err
	}
	if left == 0 {
		return fmt.Errorf("%w: %s has used its %.0f seconds for %s (UTC)", ErrQuotaExceeded, principal, m.cfg.QuotaSecondsPerDay, Day(m.cfg.Now()))
	}
	return nil
}

// Usage reads the store.
func (m *Meter) Usage(ctx context.Context, f Filter) ([]Row, error) { return m.store.Usage(ctx, f) }

// Stats reports the meter's health.
func (m *Meter) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := Stats{PendingKeys: len(m.pending) + m.unsent.keys(), FailedWrites: m.failed, StoreHealthy: m.failed == 0,
		Writers: m.holders, Closing: m.closing}
	if m.lastErr != nil {
		s.LastError = m.lastErr.Error()
	}
	return s
}

// Ping checks that the store answers, when it can tell (a Store with a Ping method); the
// readiness probe asks it.
func (m *Meter) Ping(ctx context.Context) error {
	p, ok := m.store.(interface{ Ping(context.Context) error })
	if !ok {
		return nil
	}
	return p.Ping(ctx)
}

// Close waits for the writers that hold the meter (up to CloseWait, and never past ctx), stops
// the loop and writes what is pending, retrying with backoff while the store refuses and ctx
// allows. Seconds still pending when ctx ends, and any added after the final write began, are
// counted lost by name (voiced_meter_lost_seconds_total, an error log per principal).
func (m *Meter) Close(ctx context.Context) error {
	m.mu.Lock()
	if m.closing {
		m.mu.Unlock()
		return nil
	}
	m.closing = true
	var idle chan struct{}
	if m.holders > 0 {
		idle = make(chan struct{})
		m.idle = idle
	}
	m.mu.Unlock()
	if idle != nil {
		bound := time.NewTimer(m.cfg.CloseWait)
		select {
		case <-idle:
		case <-bound.C:
		case <-ctx.Done():
		}
		bound.Stop()
		if n := m.Stats().Writers; n > 0 {
			m.cfg.Log.Error("meter closing while writers still hold it; what they add from now on is counted lost",
				"writers", n, "waited", m.cfg.CloseWait.String())
		}
	}
	close(m.stop)
	<-m.done
	<-m.commitDone

	m.mu.Lock()
	m.closed = true // from here an Add is counted lost: nothing will write it
	m.mu.Unlock()
	err := m.Flush(ctx)
	for wait := m.cfg.FlushEvery; err != nil; wait = min(2*wait, maxRetryWait) {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
		if ctx.Err() != nil {
			break
		}
		err = m.Flush(ctx)
	}
	if err != nil {
		m.mu.Lock()
		rest := []map[key]counts{m.pending, m.unsentCounts()}
		m.pending, m.unsent = map[key]counts{}, nil
		m.mu.Unlock()
		for _, kept := range rest {
			for k, c := range kept {
				m.lose(k, c, LostStoreDown)
			}
		}
	}
	return err
}
