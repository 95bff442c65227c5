package store

import (
	"context"
	"database/sql"
	"io/fs"
	"path/filepath"
	"sync"

	"github.com/trendfetch/trendfetch/internal/sqlitedb"
	"github.com/trendfetch/trendfetch/migrations"
)

// Store is a handle on one trendfetch SQLite database. It is safe for
// concurrent use by multiple goroutines; several processes may also open the
// same file at once.
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

// ReadOnlyMmapBytes is the mmap_size of read-only connections (OpenReadOnly:
// serve and the read commands), 1 GiB. modernc.org/sqlite is built with
// SQLITE_ENABLE_MEMORY_MANAGEMENT, so every connection of a process shares
// one page cache behind one mutex (pcache1's LRU group); concurrent readers
// queue on it (measured: 8 goroutines searching got 0.8 CPU cores of 2).
// Pages read through the memory map bypass that cache, so readers scale
// with cores. Mapped pages are the OS page cache: they count in RSS
// (RssFile) but are shared and reclaimable. Export turns it off on its
// connection to keep its peak RSS bounded. A 32-bit process that cannot
// map that much falls back to plain reads. A mapped file must not shrink
// under its readers (SQLite's documented mmap hazard: a manual VACUUM while
// serve runs can SIGBUS it, which SQLite cannot catch); trendfetch never
// truncates it: no VACUUM (prune has no --vacuum), no auto_vacuum. Freed
// pages are reused by later runs, so a database pruned by its policy stops
// growing; giving the space back is an offline job (docs/data.md).
const ReadOnlyMmapBytes = 1 << 30

// migrationsFS is the embedded schema; a variable so tests can substitute one.
var migrationsFS fs.FS = migrations.FS

// Open opens the database at path for reading and writing, creating its
// parent directory (mode 0700) and the file if needed, and applies pending
// migrations (sqlitedb.Open: each in its own BEGIN IMMEDIATE transaction,
// so concurrent processes opening a fresh file both succeed). When the
// schema is current this costs one version read.
//
// Errors: *sqlitedb.PathError when path is not a regular file (e.g.
// /dev/null); *SchemaVersionError if the database was written by a newer
// trendfetch.
//
// A path that is a postgres:// or postgresql:// URL opens the PostgreSQL
// store instead (openPostgres): this is the one place the engine is chosen.
func Open(ctx context.Context, path string) (*Store, error) {
	if IsPostgresURL(path) {
		return openPostgres(ctx, path, false)
	}
	return open(ctx, path, sqlitedb.Options{Migrations: migrationsFS})
}

// OpenReadOnly opens an existing database for the read-only commands and
// serve: it never creates or writes a file or directory and does no
// migration work beyond one version read; write methods fail. A reader
// that is not the writer sees correct data while writers write, or is
// refused at once (sqlitedb.Open says when and why).
//
// Errors: *NoDatabaseError (wrapping fs.ErrNotExist) when path does not
// exist or holds no trendfetch schema; *SchemaVersionError when the schema
// is older (run any write command, e.g. `trendfetch run`, to migrate) or
// newer than this binary; *sqlitedb.PathError when path is not a regular
// file or this user cannot read it as a WAL database.
func OpenReadOnly(ctx context.Context, path string) (*Store, error) {
	if IsPostgresURL(path) {
		return openPostgres(ctx, path, true)
	}
	return open(ctx, path, sqlitedb.Options{ReadOnly: true, Migrations: migrationsFS, MmapBytes: ReadOnlyMmapBytes})
}

func open(ctx context.Context, path string, o sqlitedb.Options) (*Store, error) {
	db, err := sqlitedb.Open(ctx, path, o)
	if err != nil {
		return nil, err
	}
	abs, _ := filepath.Abs(path) // sqlitedb.Open succeeded with it
	return &Store{db: db, path: abs}, nil
}

// Close closes the database. In WAL mode the last connection to close
// checkpoints the log into the main file.
func (s *Store) Close() error {
	s.mu.Lock()
	for _, st := range s.stmts {
		st.Close()
	}
	s.stmts = nil
	s.mu.Unlock()
	return s.db.Close()
}

// maxCachedRows: multi-row statements for up to this many rows (one API
// page) are prepared once and reused; larger ones are prepared per call.
const maxCachedRows = 50

// txStmt returns query prepared for use in tx. Statements built for up to
// maxCachedRows rows are cached on the Store, so the SQL of a 50-row upsert
// is parsed once per connection rather than once per page.
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

// DB returns the underlying *sql.DB for diagnostics and tests. Writes through
// it bypass the store's invariants; prefer the methods.
func (s *Store) DB() *sql.DB { return s.db }

// withTx runs fn in one write transaction (BEGIN IMMEDIATE via the DSN) and
// commits it, or rolls back if fn or the commit fails.
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
