package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io/fs"
	"sync"
	"time"

	"github.com/trendfetch/trendfetch/internal/sqlitedb"
	"github.com/trendfetch/trendfetch/migrations"
)

// Store is a handle on one trendfetch database (SQLite or PostgreSQL), safe
// for concurrent use; several processes may open the same database at once.
type Store struct {
	db   *sql.DB
	path string
	d    *dialect // chosen at open: sqliteDialect or pgDialect

	mu    sync.Mutex
	stmts map[string]*sql.Stmt // prepared multi-row statements, see txStmt
}

// NoDatabaseError is returned by OpenReadOnly when there is no database file
// (or no trendfetch schema in it) at Path. It wraps fs.ErrNotExist.
type NoDatabaseError = sqlitedb.NoDatabaseError

// SchemaVersionError reports a database whose schema version does not match
// this binary (see sqlitedb.SchemaVersionError).
type SchemaVersionError = sqlitedb.SchemaVersionError

// WriterCacheKiB is each read-write SQLite connection's page cache, 256 KiB
// (SQLite's default: 2,000): a writer reads the few pages it appends to and
// the OS caches the file, while eight connections' default caches took a
// long-running schedule thousands of runs to fill (docs/scale.md).
const WriterCacheKiB = 256

// ReadOnlyMmapBytes is the mmap_size of read-only connections, 1 GiB, so
// readers scale with cores (docs/design.md §6); Export turns it off on its
// connection to bound its peak RSS.
const ReadOnlyMmapBytes = 1 << 30

// migrationsFS is the embedded schema; a variable so tests can substitute one.
var migrationsFS fs.FS = migrations.FS

// Open opens the database at path for writing, creating and migrating it
// (sqlitedb.Open); a postgres:// or postgresql:// URL opens PostgreSQL (the
// one place the engine is chosen). Errors: *sqlitedb.PathError when path is
// not a regular file; *SchemaVersionError if a newer trendfetch wrote it.
func Open(ctx context.Context, path string) (*Store, error) { return open(ctx, path, false) }

// OpenReadOnly opens an existing database, creating and writing nothing;
// write methods fail. Errors: *NoDatabaseError (wrapping fs.ErrNotExist);
// *SchemaVersionError when the schema is not this binary's;
// *sqlitedb.PathError as Open's, or when this user cannot read the file.
func OpenReadOnly(ctx context.Context, path string) (*Store, error) { return open(ctx, path, true) }

func open(ctx context.Context, path string, readOnly bool) (*Store, error) {
	if EngineOf(path) == PostgreSQL {
		return openPostgres(ctx, path, readOnly)
	}
	return openSQLite(ctx, path, readOnly)
}

// Close closes the database (the last SQLite connection checkpoints the WAL).
func (s *Store) Close() error {
	s.mu.Lock()
	for _, st := range s.stmts {
		st.Close()
	}
	s.stmts = nil
	s.mu.Unlock()
	return s.db.Close()
}

// cachedRows is the rows (one full API page) of a cached statement.
const cachedRows = 50

// txStmt returns query prepared for use in tx, cached on the Store when built
// for cachedRows rows (a full page's upsert is parsed once, not per page);
// other lengths are prepared per use, as caching each length seen kept up to
// 50 statements of each kind on each connection (issue 42: a scheduler's
// memory grew 30% over 1,000 runs).
func (s *Store) txStmt(ctx context.Context, tx *sql.Tx, query string, rows int) (*sql.Stmt, error) {
	if rows != cachedRows {
		return tx.PrepareContext(ctx, query)
	}
	s.mu.Lock()
	st, ok := s.stmts[query]
	if !ok {
		var err error
		if st, err = s.db.PrepareContext(ctx, query); err != nil {
			s.mu.Unlock()
			return nil, err
		}
		if s.stmts == nil {
			s.stmts = map[string]*sql.Stmt{}
		}
		s.stmts[query] = st
	}
	s.mu.Unlock()
	return tx.StmtContext(ctx, st), nil
}

// DB returns the underlying *sql.DB for diagnostics and tests.
func (s *Store) DB() *sql.DB { return s.db }

// withTx runs fn in one write transaction (BEGIN IMMEDIATE on SQLite).
func (s *Store) withTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// Check verifies the database, or names the first problems: on SQLite the
// integrity, foreign key and both FTS5 index checks (a writable Store: FTS5
// checks are INSERTs); on PostgreSQL that video_search matches every text.
func (s *Store) Check(ctx context.Context) error { return s.d.check(ctx, s.db) }

// The store's roles: what each consumer needs of it (docs/design.md §2).
// *Store, on either engine, is the one implementation; a store opened
// read-only fails every write method.

// RunLog is the record of runs (docs/design.md §5) a run keeps of itself.
type RunLog interface {
	StartRun(ctx context.Context, r Run) (int64, error)
	RecordUsage(ctx context.Context, r Run) error
	FinishRun(ctx context.Context, r Run) error
	AbandonRuns(ctx context.Context, credential, region string, before time.Time) (int, error)
	CallsSince(ctx context.Context, credential, method string, since time.Time) (int, error)
}

// Capturer stores what a run fetches: pages of captures, statistics
// samples, channels and categories.
type Capturer interface {
	SaveSnapshot(ctx context.Context, p Snapshot) error
	CompleteCapture(ctx context.Context, runID int64, region, kind, query string, at time.Time) error
	DueForStats(ctx context.Context, region string, runID int64, followedSince, sampledBefore time.Time) ([]string, error)
	SaveSamples(ctx context.Context, samples []Sample, at time.Time) (int, error)
	StaleChannels(ctx context.Context, ids []string, olderThan time.Time) ([]string, error)
	UpsertChannels(ctx context.Context, chs []Channel, at time.Time) error
	CategoriesFetchedAt(ctx context.Context, region string) (time.Time, error)
	UpsertCategories(ctx context.Context, region string, cats []Category, at time.Time) error
}

// Retention is the storage policy's primitives (Policy applies them) and
// the text refresh of the amended policy.
type Retention interface {
	LegacyData(ctx context.Context) (bool, error)
	PruneDue(ctx context.Context, before time.Time) (bool, error)
	ApplyCutoffs(ctx context.Context, statsBefore, textBefore time.Time, dryRun bool) (PruneReport, error)
	StaleText(ctx context.Context, before time.Time, limit int) ([]string, error)
	RefreshText(ctx context.Context, vs []Video, at time.Time) error
}

// RunStore is what a run (fetch.Runner) needs of the store.
type RunStore interface {
	RunLog
	Capturer
	Retention
}

// Reader is what the read API (serve) needs: searches, charts, a video's
// history and the runs, and the pool size (serve admits half as many
// heavy requests at a time).
type Reader interface {
	SearchPage(ctx context.Context, q SearchQuery) (hits []Hit, next int, err error)
	CaptureAt(ctx context.Context, q CaptureQuery) (Capture, []Entry, error)
	History(ctx context.Context, id string) (VideoHistory, error)
	RunsPage(ctx context.Context, q RunsQuery) ([]Run, error)
	Health(ctx context.Context, region string, dayStart time.Time) (RegionHealth, error)
	RunsStarted(ctx context.Context, region string, from, to time.Time) ([]Run, error)
	DatasetRegions(ctx context.Context) ([]string, error)
	MaxOpenConns() int
}

var (
	_ RunStore = (*Store)(nil)
	_ Reader   = (*Store)(nil)
)

// MaxOpenConns is the size of the connection pool.
func (s *Store) MaxOpenConns() int { return s.db.Stats().MaxOpenConnections }

// tsLayout is how timestamps are stored: UTC, fixed width, microseconds, so
// text order is time order.
const tsLayout = "2006-01-02T15:04:05.000000Z"

func fmtTime(t time.Time) string { return t.UTC().Format(tsLayout) }

// nullTime stores the zero time as NULL.
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return fmtTime(t)
}

func nullInt(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

// parseTime reads a stored timestamp; NULL or unparsable text is the zero time.
func parseTime(ns sql.NullString) time.Time {
	if !ns.Valid || ns.String == "" {
		return time.Time{}
	}
	t, err := time.Parse(tsLayout, ns.String)
	if err != nil {
		if t, err = time.Parse(time.RFC3339Nano, ns.String); err != nil {
			return time.Time{}
		}
	}
	return t.UTC()
}

func intPtr(ni sql.NullInt64) *int64 {
	if !ni.Valid {
		return nil
	}
	return new(ni.Int64)
}

// strPtr is s, or nil (JSON null) for "".
func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// querier is *sql.DB or *sql.Tx.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// each runs query and calls fn on every row, stopping at fn's first error.
func each(ctx context.Context, q querier, query string, args []any, fn func(*sql.Rows) error) error {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// column returns the first column of every row of query (nil on error).
func column[T any](ctx context.Context, q querier, query string, args ...any) ([]T, error) {
	var out []T
	err := each(ctx, q, query, args, func(r *sql.Rows) error {
		var v T
		out = append(out, v)
		return r.Scan(&out[len(out)-1])
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ParseAt reads a point in time as --at, --until and ?at= take it: RFC 3339
// (2026-03-02T08:00:00Z), or a UTC date (2026-03-02) meaning its end; UTC.
func ParseAt(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), nil
	}
	if d, err := time.Parse(time.DateOnly, s); err == nil {
		return d.Add(24*time.Hour - time.Microsecond), nil
	}
	return time.Time{}, errors.New("want an RFC 3339 time (2026-03-02T08:00:00Z) or a date (2026-03-02)")
}

// jsonTime is t in UTC, or nil (JSON null) for the zero time.
func jsonTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return new(t.UTC())
}

// jsonText is v in JSON, for values that cannot fail to encode (strings,
// numbers, and slices, maps and structs of them).
func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
