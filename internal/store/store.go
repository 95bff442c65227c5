package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
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
	pg   bool // PostgreSQL (postgres.go), else SQLite

	mu    sync.Mutex
	stmts map[string]*sql.Stmt // prepared multi-row statements, see txStmt
}

// NoDatabaseError is returned by OpenReadOnly when there is no database file
// (or no trendfetch schema in it) at Path. It wraps fs.ErrNotExist.
type NoDatabaseError = sqlitedb.NoDatabaseError

// SchemaVersionError reports a database whose schema version does not match
// this binary (see sqlitedb.SchemaVersionError).
type SchemaVersionError = sqlitedb.SchemaVersionError

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
	if IsPostgresURL(path) {
		return openPostgres(ctx, path, readOnly)
	}
	o := sqlitedb.Options{ReadOnly: readOnly, Migrations: migrationsFS}
	if readOnly {
		o.MmapBytes = ReadOnlyMmapBytes
	}
	db, err := sqlitedb.Open(ctx, path, o)
	if err != nil {
		return nil, err
	}
	abs, _ := filepath.Abs(path) // sqlitedb.Open succeeded with it
	return &Store{db: db, path: abs}, nil
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

// maxCachedRows is the most rows (one API page) of a cached statement.
const maxCachedRows = 50

// txStmt returns query prepared for use in tx, cached on the Store when built
// for up to maxCachedRows rows (a 50-row upsert is parsed once, not per page).
func (s *Store) txStmt(ctx context.Context, tx *sql.Tx, query string, rows int) (*sql.Stmt, error) {
	if rows > maxCachedRows {
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
func (s *Store) Check(ctx context.Context) error {
	if s.pg {
		var stale int64
		if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM videos v LEFT JOIN video_search x ON x.video_rowid = v.rowid
WHERE x.doc IS DISTINCT FROM search_doc(v.title, v.channel_title, v.tags, v.description)
   OR x.tri IS DISTINCT FROM search_fold(v.title || E'\n' || v.channel_title)`).Scan(&stale); err != nil {
			return fmt.Errorf("search index check: %w", err)
		}
		if stale > 0 {
			return fmt.Errorf("search index video_search check failed: %d videos not indexed as their text is", stale)
		}
		return nil
	}
	problems, err := column[string](ctx, s.db, `PRAGMA integrity_check(20)`)
	if err != nil {
		return fmt.Errorf("integrity check: %w", err)
	}
	if problems = slices.DeleteFunc(problems, func(m string) bool { return m == "ok" }); len(problems) > 0 {
		return fmt.Errorf("integrity check failed: %s", strings.Join(problems, "; "))
	}

	var table, parent string
	err = s.db.QueryRowContext(ctx, `SELECT "table", parent FROM pragma_foreign_key_check`).Scan(&table, &parent)
	switch {
	case err == nil:
		return fmt.Errorf("foreign key check failed: a row of %s refers to a missing row of %s", table, parent)
	case !errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("foreign key check: %w", err)
	}

	// rank = 1: also compare the index with the content table (videos).
	for _, fts := range []string{"videos_fts", "videos_tri"} {
		if _, err := s.db.ExecContext(ctx,
			`INSERT INTO `+fts+` (`+fts+`, rank) VALUES ('integrity-check', 1)`); err != nil {
			return fmt.Errorf("full-text index %s check failed: %w", fts, err)
		}
	}
	return nil
}

// Backend is what every caller needs of a dataset store (docs/design.md §2,
// §10a), implemented by *Store on both engines (its methods document the
// meaning); a store opened read-only fails every write method.
type Backend interface {
	// Runs: one record per run of a region (docs/design.md §5).
	StartRun(ctx context.Context, r Run) (int64, error)
	RecordUsage(ctx context.Context, r Run) error
	FinishRun(ctx context.Context, r Run) error
	AbandonRuns(ctx context.Context, credential, region string, before time.Time) (int, error)
	RunsPage(ctx context.Context, q RunsQuery) ([]Run, error)
	LastSuccess(ctx context.Context, credential string) (map[string]time.Time, error)
	CallsSince(ctx context.Context, credential, method string, since time.Time) (int, error)
	Health(ctx context.Context, region string, dayStart time.Time) (RegionHealth, error)

	// What a run stores.
	SaveSnapshot(ctx context.Context, p Snapshot) error
	CompleteCapture(ctx context.Context, runID int64, region, kind, query string, at time.Time) error
	DueForStats(ctx context.Context, region string, runID int64, followedSince, sampledBefore time.Time) ([]string, error)
	SaveSamples(ctx context.Context, samples []Sample, at time.Time) (int, error)
	StaleChannels(ctx context.Context, ids []string, olderThan time.Time) ([]string, error)
	UpsertChannels(ctx context.Context, chs []Channel, at time.Time) error
	CategoriesFetchedAt(ctx context.Context, region string) (time.Time, error)
	UpsertCategories(ctx context.Context, region string, cats []Category, at time.Time) error
	StaleText(ctx context.Context, before time.Time, limit int) ([]string, error)
	RefreshText(ctx context.Context, vs []Video, at time.Time) error

	// Reads: search, charts, a video's history, exports (one snapshot).
	SearchPage(ctx context.Context, q SearchQuery) (hits []Hit, next int, err error)
	CaptureAt(ctx context.Context, q CaptureQuery) (Capture, []Entry, error)
	History(ctx context.Context, id string) (VideoHistory, error)
	ExportRegions(ctx context.Context, q ExportQuery) ([]string, error)
	Export(ctx context.Context, q ExportQuery, fn func(*ExportRow) error) error

	// The storage policy's primitives (Policy applies them).
	LegacyData(ctx context.Context) (bool, error)
	PruneDue(ctx context.Context, before time.Time) (bool, error)
	Prune(ctx context.Context, before time.Time, dryRun bool) (PruneReport, error)
	ApplyCutoffs(ctx context.Context, statsBefore, textBefore time.Time, dryRun bool) (PruneReport, error)

	// MaxOpenConns is the most connections the store opens at once (serve
	// admits half as many heavy requests at a time).
	MaxOpenConns() int
	Close() error
}

var _ Backend = (*Store)(nil)

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
