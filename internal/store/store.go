package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// Store is a handle on one trendfetch SQLite database. It is safe for
// concurrent use by multiple goroutines; several processes may also open the
// same file at once.
type Store struct {
	db       *sql.DB
	path     string
	readOnly bool

	mu    sync.Mutex
	stmts map[string]*sql.Stmt // prepared multi-row statements, see txStmt
}

// NoDatabaseError is returned by OpenReadOnly when there is no database file
// (or no trendfetch schema in it) at Path. It wraps fs.ErrNotExist.
type NoDatabaseError struct {
	Path string
}

// Error says where the database was expected and what to run.
func (e *NoDatabaseError) Error() string {
	return fmt.Sprintf("no database at %s; run `trendfetch run` first", e.Path)
}

// Unwrap returns fs.ErrNotExist, so errors.Is(err, fs.ErrNotExist) holds.
func (e *NoDatabaseError) Unwrap() error { return fs.ErrNotExist }

// busyTimeout is how long a connection waits for another writer's lock
// before giving up with SQLITE_BUSY. Writes are short (one chart page), so
// 10 s is generous even with many cron processes starting at the same minute.
const busyTimeout = 10 * time.Second

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
// serve runs can SIGBUS it); trendfetch never truncates it (no VACUUM, no
// auto_vacuum).
const ReadOnlyMmapBytes = 1 << 30

// dsn builds the modernc.org/sqlite data source name for path.
//
// The path is given as a file: URI so that '?', '#' and '%' in it are
// escaped rather than parsed. Pragmas run on every new connection:
//
//   - busy_timeout(10000): wait up to 10 s for a lock held by another
//     connection or process instead of failing at once with SQLITE_BUSY
//     ("database is locked"). The driver runs it before the other pragmas.
//   - journal_mode(WAL): readers never block the writer and the writer never
//     blocks readers; persistent in the file, so a no-op after the first open.
//   - foreign_keys(1): enforce captures/entries -> runs/videos references (SQLite
//     leaves them off per connection by default).
//   - synchronous(NORMAL): in WAL mode this is durable against application
//     crashes; a power loss may lose the last commits but never corrupts.
//
// _txlock=immediate makes database/sql's BeginTx issue BEGIN IMMEDIATE, which
// takes the write lock up front (waiting via busy_timeout). A deferred
// transaction that reads and then writes can fail with SQLITE_BUSY on the
// lock upgrade without the busy handler being able to help; immediate ones
// cannot. Reads outside transactions are unaffected.
//
// Read-only handles add query_only(1) so that no statement can write.
func dsn(path string, readOnly bool) string {
	p := filepath.ToSlash(path)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // Windows drive paths: file:///C:/...
	}
	u := url.URL{Scheme: "file", Path: p}
	q := []string{
		"_pragma=busy_timeout(" + fmt.Sprint(busyTimeout.Milliseconds()) + ")",
		"_pragma=foreign_keys(1)",
		"_pragma=synchronous(NORMAL)",
		"_txlock=immediate",
	}
	if readOnly {
		q = append(q, "_pragma=query_only(1)", "_pragma=mmap_size("+strconv.Itoa(ReadOnlyMmapBytes)+")")
	} else {
		q = append(q, "_pragma=journal_mode(WAL)")
	}
	return u.String() + "?" + strings.Join(q, "&")
}

// Open opens the database at path for reading and writing, creating its
// parent directory (mode 0700) and the file if needed, and applies pending
// migrations (each in its own BEGIN IMMEDIATE transaction, so concurrent
// processes opening a fresh file both succeed). When the schema is current
// this costs one version read.
//
// It returns a *SchemaVersionError if the database was written by a newer
// trendfetch (its schema version is higher than this binary knows).
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("cannot open database: empty path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("cannot open database %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("cannot create database directory: %w", err)
	}
	s, err := openDB(ctx, abs, false)
	if err != nil {
		return nil, err
	}
	migs, err := loadMigrations(migrationsFS)
	if err != nil {
		s.db.Close()
		return nil, err
	}
	if err := migrate(ctx, s.db, abs, migs); err != nil {
		s.db.Close()
		return nil, err
	}
	return s, nil
}

// OpenReadOnly opens an existing database for the read-only commands
// (search, runs): it never creates a file or directory and does no
// migration work beyond one version read. Every connection has
// query_only(1), so write methods fail.
//
// Errors: *NoDatabaseError (wrapping fs.ErrNotExist) when path does not
// exist or holds no trendfetch schema; *SchemaVersionError when the schema
// is older (run any write command, e.g. `trendfetch run`, to migrate) or
// newer than this binary.
func OpenReadOnly(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("cannot open database: empty path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("cannot open database %s: %w", path, err)
	}
	fi, err := os.Stat(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &NoDatabaseError{Path: path}
	}
	if err != nil {
		return nil, fmt.Errorf("cannot open database: %w", err)
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("cannot open database %s: is a directory", path)
	}
	s, v, err := openReadOnly(ctx, abs, dsn(abs, true))
	if err != nil && cannotOpen(err) {
		// Read-only media: a WAL database needs its -shm file, which cannot
		// be created there. Nothing can write to such a file either, so
		// SQLite may treat it as immutable (no locks, no -shm).
		s, v, err = openReadOnly(ctx, abs, dsn(abs, true)+"&immutable=1")
	}
	if err != nil {
		return nil, err
	}
	migs, err := loadMigrations(migrationsFS)
	if err != nil {
		s.db.Close()
		return nil, err
	}
	switch want := len(migs); {
	case v == 0:
		s.db.Close()
		return nil, &NoDatabaseError{Path: path}
	case v != want:
		s.db.Close()
		return nil, &SchemaVersionError{Path: path, Have: v, Want: want}
	}
	return s, nil
}

// openReadOnly opens abs with dataSource and reads its schema version.
func openReadOnly(ctx context.Context, abs, dataSource string) (*Store, int, error) {
	s, err := openDSN(ctx, abs, dataSource)
	if err != nil {
		return nil, 0, err
	}
	s.readOnly = true
	v, err := schemaVersion(ctx, s.db)
	if err != nil {
		s.db.Close()
		return nil, 0, fmt.Errorf("cannot read schema version of %s: %w", abs, err)
	}
	return s, v, nil
}

// cannotOpen reports SQLite's "unable to open database file" and read-only
// errors, which on a database that exists mean read-only media.
func cannotOpen(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "unable to open database file") || strings.Contains(msg, "readonly") || strings.Contains(msg, "read-only")
}

func openDB(ctx context.Context, abs string, readOnly bool) (*Store, error) {
	return openDSN(ctx, abs, dsn(abs, readOnly))
}

func openDSN(ctx context.Context, abs, dataSource string) (*Store, error) {
	db, err := sql.Open("sqlite", dataSource)
	if err != nil {
		return nil, fmt.Errorf("cannot open database %s: %w", abs, err)
	}
	// Connections are cheap but each runs the pragmas; a handful is plenty
	// (SQLite serialises writers anyway, WAL readers run in parallel). All
	// stay open when idle: a reopened connection starts with a cold cache.
	const conns = 8
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	if err := pingRetry(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("cannot open database %s: %w%s", abs, err, spaceHint(filepath.Dir(abs)))
	}
	return &Store{db: db, path: abs}, nil
}

// pingRetry opens the first connection. Switching a fresh file to WAL needs
// an exclusive lock and may report SQLITE_BUSY without consulting the busy
// handler when another process is doing the same thing, so retry briefly.
func pingRetry(ctx context.Context, db *sql.DB) error {
	deadline := time.Now().Add(busyTimeout)
	delay := 5 * time.Millisecond
	for {
		err := db.PingContext(ctx)
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		if delay < 200*time.Millisecond {
			delay *= 2
		}
	}
}

func isBusy(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "SQLITE_BUSY") || strings.Contains(msg, "database is locked")
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

// Path returns the absolute path of the database file.
func (s *Store) Path() string { return s.path }

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
