package meter

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	_ "modernc.org/sqlite"             // database/sql driver "sqlite" (pure Go)
)

// Doors name where seconds were spent.
const (
	DoorConversation = "conversation" // the realtime socket
	DoorTranscribe   = "transcribe"   // /v1/transcribe, /v1/audio/transcript(ions)
	DoorSynthesize   = "synthesize"   // /v1/synthesize, /v1/speak/stream, /v1/audio/speech
)

// ServicePrincipal is the principal the raw doors (service token) meter under.
const ServicePrincipal = "service"

// Record is seconds heard and spoken by one principal at one door, at a moment.
type Record struct {
	Principal string
	Org       string
	Door      string
	At        time.Time
	Heard     float64 // seconds of audio past the squelch
	Spoken    float64 // seconds of audio sent
}

// Filter selects usage. Empty fields select all; From/To are inclusive UTC days.
type Filter struct {
	Principal string
	Org       string
	From, To  time.Time
}

// Row is one principal's seconds for one door and day.
type Row struct {
	Principal string  `json:"principal"`
	Org       string  `json:"org"`
	Door      string  `json:"door"`
	Day       string  `json:"day"`
	Heard     float64 `json:"heardSeconds"`
	Spoken    float64 `json:"spokenSeconds"`
}

// Store keeps usage durably. Add is one transaction: all records land or none.
type Store interface {
	Add(ctx context.Context, recs []Record) error
	Usage(ctx context.Context, f Filter) ([]Row, error)
	Close() error
}

// SQL is a Store on SQLite (one node) or Postgres (several nodes).
type SQL struct {
	db      *sql.DB
	dialect string // "sqlite" or "postgres"
	// The write's statements, prepared once at open (AddOnce ran a parse of each per write: 1.5 %
	// of the server's CPU at 16 conversations, issue 26).
	addBatch, prune, addUsage *sql.Stmt
}

var _ Store = (*SQL)(nil)

// Ping checks that the database answers (the readiness probe asks it).
func (s *SQL) Ping(ctx context.Context) error { return s.db.PingContext(ctx) }

// migrations run in order, each once; the applied version is kept in schema_migrations.
var migrations = []string{
	`CREATE TABLE IF NOT EXISTS usage_daily (
		principal      TEXT NOT NULL,
		org            TEXT NOT NULL,
		door           TEXT NOT NULL,
		day            TEXT NOT NULL,
		heard_seconds  DOUBLE PRECISION NOT NULL DEFAULT 0,
		spoken_seconds DOUBLE PRECISION NOT NULL DEFAULT 0,
		PRIMARY KEY (principal, org, door, day)
	)`,
	`CREATE INDEX IF NOT EXISTS usage_daily_org_day ON usage_daily (org, day)`,
	// Batches applied (AddOnce), so a retried write that had landed is not counted twice: since
	// migration 5 one row per writer (id) with its last batch number (seq), refreshed (at) at each
	// write; a writer silent for batchKeep is pruned.
	`CREATE TABLE IF NOT EXISTS usage_batches (
		id TEXT PRIMARY KEY,
		at TEXT NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS usage_batches_at ON usage_batches (at)`,
	// One row per writer (a meter's lifetime), its last batch number, instead of one per batch.
	`ALTER TABLE usage_batches ADD COLUMN seq BIGINT NOT NULL DEFAULT 0`,
}

// batchKeep is how long a writer's last batch number is remembered after its last write: a retry
// later than this (the store away for a week, the process alive all along) would count twice.
const batchKeep = 7 * 24 * time.Hour

var _ Idempotent = (*SQL)(nil)

// OpenSQLite opens (creating) the database file dataDir/meter.db.
func OpenSQLite(ctx context.Context, dataDir string) (*SQL, error) {
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, fmt.Errorf("meter: create data dir: %w", err)
	}
	path := filepath.Join(dataDir, "meter.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)&_pragma=synchronous(FULL)")
	if err != nil {
		return nil, fmt.Errorf("meter: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1) // SQLite has one writer; one connection keeps transactions simple
	return open(ctx, db, "sqlite")
}

// OpenPostgres connects to dsn (postgres://…) and migrates the schema.
func OpenPostgres(ctx context.Context, dsn string) (*SQL, error) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, fmt.Errorf("meter: open postgres: %w", err)
	}
	return open(ctx, db, "postgres")
}

func open(ctx context.Context, db *sql.DB, dialect string) (*SQL, error) {
	s := &SQL{db: db, dialect: dialect}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("%w: %s: %v", ErrStoreDown, dialect, err)
	}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if err := s.migrateSessions(ctx); err != nil { // sessions.go
		db.Close()
		return nil, err
	}
	for _, st := range []struct {
		to *(*sql.Stmt)
		q  string
	}{{&s.addBatch, addBatchSQL}, {&s.prune, pruneSQL}, {&s.addUsage, addUsageSQL}} {
		p, err := db.PrepareContext(ctx, s.rebind(st.q))
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("%w: %s: prepare: %v", ErrStoreDown, dialect, err)
		}
		*st.to = p
	}
	return s, nil
}

// The statements of a write (AddOnce), prepared at open.
const (
	addBatchSQL = `INSERT INTO usage_batches (id, at, seq) VALUES (?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, at = excluded.at WHERE usage_batches.seq < excluded.seq`
	pruneSQL    = `DELETE FROM usage_batches WHERE at < ?`
	addUsageSQL = `INSERT INTO usage_daily (principal, org, door, day, heard_seconds, spoken_seconds)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (principal, org, door, day) DO UPDATE SET
			heard_seconds = usage_daily.heard_seconds + excluded.heard_seconds,
			spoken_seconds = usage_daily.spoken_seconds + excluded.spoken_seconds`
)

func (s *SQL) migrate(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY)`); err != nil {
		return fmt.Errorf("meter: migrate: %w", err)
	}
	for v, stmt := range migrations {
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("meter: migrate: %w", err)
		}
		var n int
		if err := tx.QueryRowContext(ctx, s.rebind(`SELECT COUNT(*) FROM schema_migrations WHERE version = ?`), v+1).Scan(&n); err != nil {
			tx.Rollback()
			return fmt.Errorf("meter: migrate: %w", err)
		}
		if n == 0 {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				tx.Rollback()
				return fmt.Errorf("meter: migration %d: %w", v+1, err)
			}
			if _, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO schema_migrations (version) VALUES (?) ON CONFLICT DO NOTHING`), v+1); err != nil {
				tx.Rollback()
				return fmt.Errorf("meter: migration %d: %w", v+1, err)
			}
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("meter: migration %d: %w", v+1, err)
		}
	}
	return nil
}

// rebind turns ? placeholders into $1, $2… for Postgres.
func (s *SQL) rebind(q string) string {
	if s.dialect != "postgres" {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Day is the UTC calendar day a moment is metered under.
func Day(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// Add adds every record in one transaction.
func (s *SQL) Add(ctx context.Context, recs []Record) error { return s.AddOnce(ctx, "", 0, recs) }

// AddOnce adds every record in one transaction, once per writer's batch: the writer's row in
// usage_batches keeps the last number applied, and a batch at or below it (a retry of a write
// whose COMMIT landed but whose answer was lost) adds nothing. A writer writes its batches in
// order, each after the one before landed. An empty writer always adds.
func (s *SQL) AddOnce(ctx context.Context, writer string, seq uint64, recs []Record) error {
	if len(recs) == 0 {
		return nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("%w: begin: %v", ErrStoreDown, err)
	}
	if writer != "" {
		now := time.Now().UTC()
		res, err := tx.StmtContext(ctx, s.addBatch).ExecContext(ctx, writer, now.Format(time.RFC3339), int64(seq))
		if err != nil {
			tx.Rollback()
			return fmt.Errorf("%w: add batch: %v", ErrStoreDown, err)
		}
		if n, err := res.RowsAffected(); err == nil && n == 0 {
			tx.Rollback()
			return nil // applied before
		}
		if _, err := tx.StmtContext(ctx, s.prune).ExecContext(ctx, now.Add(-batchKeep).Format(time.RFC3339)); err != nil {
			tx.Rollback()
			return fmt.Errorf("%w: prune batches: %v", ErrStoreDown, err)
		}
	}
	q := tx.StmtContext(ctx, s.addUsage)
	for _, r := range recs {
		if _, err := q.ExecContext(ctx, r.Principal, r.Org, r.Door, Day(r.At), r.Heard, r.Spoken); err != nil {
			tx.Rollback()
			return fmt.Errorf("%w: add: %v", ErrStoreDown, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("%w: commit: %v", ErrStoreDown, err)
	}
	return nil
}

// Usage returns the rows the filter selects, ordered by principal, org, day, door.
func (s *SQL) Usage(ctx context.Context, f Filter) ([]Row, error) {
	q := `SELECT principal, org, door, day, heard_seconds, spoken_seconds FROM usage_daily WHERE 1=1`
	var args []any
	if f.Principal != "" {
		q += ` AND principal = ?`
		args = append(args, f.Principal)
	}
	if f.Org != "" {
		q += ` AND org = ?`
		args = append(args, f.Org)
	}
	if !f.From.IsZero() {
		q += ` AND day >= ?`
		args = append(args, Day(f.From))
	}
	if !f.To.IsZero() {
		q += ` AND day <= ?`
		args = append(args, Day(f.To))
	}
	q += ` ORDER BY principal, org, day, door`
	rows, err := s.db.QueryContext(ctx, s.rebind(q), args...)
	if err != nil {
		return nil, fmt.Errorf("%w: usage: %v", ErrStoreDown, err)
	}
	defer rows.Close()
	var out []Row
	for rows.Next() {
		var r Row
		if err := rows.Scan(&r.Principal, &r.Org, &r.Door, &r.Day, &r.Heard, &r.Spoken); err != nil {
			return nil, fmt.Errorf("%w: usage: %v", ErrStoreDown, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%w: usage: %v", ErrStoreDown, err)
	}
	return out, nil
}

// Close closes the statements and the database.
func (s *SQL) Close() error {
	for _, st := range []*sql.Stmt{s.addBatch, s.prune, s.addUsage} {
		if st != nil {
			st.Close()
		}
	}
	return s.db.Close()
}
