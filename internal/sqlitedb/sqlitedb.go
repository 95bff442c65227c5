// Package sqlitedb opens trendfetch's SQLite databases (the store and
// quota.db) one way (docs/design.md §6): modernc.org/sqlite, WAL, a busy
// timeout, foreign keys, every pragma declared once in the DSN, and numbered
// *.sql migrations, each applied with its version row in one transaction.
package sqlitedb

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"modernc.org/sqlite" // registers the "sqlite" database/sql driver
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/trendfetch/trendfetch/internal/exitcode"
)

// DefaultBusyTimeout is how long a connection waits for another writer's
// lock (SQLITE_BUSY after): generous, as write transactions are short.
const DefaultBusyTimeout = 10 * time.Second

// DefaultMaxConns is the pool size when Options.MaxConns is 0; idle
// connections stay open (each keeps its pragmas and page cache).
const DefaultMaxConns = 8

// Options says how Open opens a database; the zero value opens it for
// reading and writing, without schema management.
type Options struct {
	// ReadOnly opens an existing file, creating and writing nothing.
	ReadOnly bool
	// Migrations holds the schema (see Migrations); nil: no schema handling.
	Migrations fs.FS
	// MaxConns overrides DefaultMaxConns (1 makes this process's goroutines
	// queue in database/sql rather than on the file lock).
	MaxConns int
	// MmapBytes, when > 0, is the mmap_size pragma (docs/design.md §6).
	MmapBytes int64
	// CacheKiB, when > 0, is each connection's page cache in KiB (the
	// cache_size pragma; SQLite's default is 2,000 KiB).
	CacheKiB int
}

// PathError reports a database path that cannot be used as given (not a
// regular file, or a read-only open this user lacks the permissions for): a
// configuration error (exit 2). Reason is one line saying what to do.
type PathError struct {
	Path   string
	Reason string
}

// ExitCode is exitcode.Usage: a database path that cannot be used.
func (e *PathError) ExitCode() int { return exitcode.Usage }

// Error returns "database PATH: REASON".
func (e *PathError) Error() string { return fmt.Sprintf("database %s: %s", e.Path, e.Reason) }

// NoDatabaseError reports a read-only open of a path where no database
// exists yet (no file, or a file without schema). It wraps fs.ErrNotExist.
type NoDatabaseError struct {
	Path string
	// Tables: the database exists (a new PostgreSQL database, Path its
	// host/name) but holds no trendfetch tables yet.
	Tables bool
}

// Error says where the database was expected and what creates it.
func (e *NoDatabaseError) Error() string {
	if e.Tables {
		return fmt.Sprintf("no trendfetch tables in PostgreSQL database %s yet: nothing recorded; `trendfetch run` creates them", e.Path)
	}
	return fmt.Sprintf("no database at %s yet: nothing recorded; `trendfetch run` creates it", e.Path)
}

// ExitCode is exitcode.NotFound: nothing recorded yet, alike for every read command.
func (e *NoDatabaseError) ExitCode() int { return exitcode.NotFound }

// Unwrap returns fs.ErrNotExist, so errors.Is(err, fs.ErrNotExist) holds.
func (e *NoDatabaseError) Unwrap() error { return fs.ErrNotExist }

// dsn is the data source name for the absolute path abs, a file: URI whose pragmas run on every new
// connection. synchronous(NORMAL) in WAL mode may lose the last commits on power loss, never
// corrupts; _txlock=immediate takes the write lock up front, waiting via busy_timeout (a deferred
// transaction's lock upgrade gets SQLITE_BUSY the busy handler cannot help).
func dsn(abs string, o Options) string {
	p := filepath.ToSlash(abs)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // Windows drive paths: file:///C:/...
	}
	u := url.URL{Scheme: "file", Path: p}
	q := []string{
		"_pragma=busy_timeout(" + strconv.FormatInt(DefaultBusyTimeout.Milliseconds(), 10) + ")",
		"_pragma=foreign_keys(1)",
	}
	if o.ReadOnly {
		q = append(q, "mode=ro")
	} else {
		q = append(q, "_pragma=journal_mode(WAL)", "_pragma=synchronous(NORMAL)", "_txlock=immediate")
	}
	if o.MmapBytes > 0 {
		q = append(q, "_pragma=mmap_size("+strconv.FormatInt(o.MmapBytes, 10)+")")
	}
	if o.CacheKiB > 0 {
		q = append(q, "_pragma=cache_size(-"+strconv.Itoa(o.CacheKiB)+")")
	}
	return u.String() + "?" + strings.Join(q, "&")
}

// Open opens the SQLite database at path (a file path, not a URI), read-write
// creating its directory (0700) and file and applying o.Migrations. Errors:
// *PathError (empty path, not a regular file, a reader without permissions);
// *NoDatabaseError (read-only: no file or schema); *SchemaVersionError when
// the schema is newer than o.Migrations, or (read-only) older.
func Open(ctx context.Context, path string, o Options) (*sql.DB, error) {
	if path == "" {
		return nil, &PathError{Path: `""`, Reason: "empty path; give the path of a database file"}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("cannot open database %s: %w", path, err)
	}
	var migs []Migration
	if o.Migrations != nil {
		if migs, err = Migrations(o.Migrations); err != nil {
			return nil, err
		}
	}
	fi, err := os.Stat(abs)
	switch {
	case err == nil && !fi.Mode().IsRegular():
		return nil, &PathError{Path: path, Reason: fmt.Sprintf("not a regular file (%s); give the path of a database file", fileKind(fi.Mode()))}
	case errors.Is(err, fs.ErrNotExist) && o.ReadOnly:
		return nil, &NoDatabaseError{Path: path}
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
			return nil, fmt.Errorf("cannot create database directory: %w", err)
		}
	case err != nil:
		return nil, fmt.Errorf("cannot open database: %w", err)
	}
	if o.ReadOnly {
		return openReadOnly(ctx, path, abs, o, migs)
	}
	db, err := openPool(ctx, dsn(abs, o), o)
	if err != nil {
		return nil, fmt.Errorf("cannot open database %s: %w%s", path, err, spaceHint(filepath.Dir(abs)))
	}
	if migs != nil {
		if err := Migrate(ctx, db, path, migs, Version); err != nil {
			db.Close()
			return nil, err
		}
	}
	return db, nil
}

// openReadOnly is Open with o.ReadOnly on a file. A reader that cannot write
// the WAL index reads it as-is while it exists (readonly_shm), else gets a
// *PathError; immutable=1 only on a read-only filesystem without a -wal
// (anywhere else it returned wrong data once a writer wrote).
func openReadOnly(ctx context.Context, path, abs string, o Options, migs []Migration) (*sql.DB, error) {
	db, v, err := openVersion(ctx, dsn(abs, o))
	if err != nil && cannotOpen(err) {
		_, walErr := os.Stat(abs + "-wal")
		_, shmErr := os.Stat(abs + "-shm")
		_, roFS, _ := statfs(filepath.Dir(abs))
		switch {
		case errors.Is(walErr, fs.ErrNotExist) && roFS:
			db, v, err = openVersion(ctx, dsn(abs, o)+"&immutable=1")
		case walErr != nil || shmErr != nil:
			return nil, readerNeeds(path, abs)
		default:
			if db, v, err = openVersion(ctx, dsn(abs, o)+"&readonly_shm=1"); err != nil && cannotOpen(err) {
				return nil, readerNeeds(path, abs)
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("cannot open database %s: %w", path, err)
	}
	if migs == nil {
		return db, nil
	}
	switch want := len(migs); {
	case v == 0:
		db.Close()
		return nil, &NoDatabaseError{Path: path}
	case v != want:
		db.Close()
		return nil, &SchemaVersionError{Path: path, Have: v, Want: want}
	}
	return db, nil
}

// readerNeeds is the one line a reader gets when SQLite cannot give it a
// WAL index it may use: it must be able to create one beside the file.
func readerNeeds(path, abs string) error {
	dir := filepath.Dir(abs)
	return &PathError{Path: path, Reason: fmt.Sprintf(
		"cannot read it as uid %d while no writer has it open: a reader must create %s-shm and -wal in %s; "+
			"make that directory writable for this user (e.g. a shared group: chgrp GROUP %s && chmod g+ws %s, database files g+rw) "+
			"or run as the user that writes the database",
		os.Getuid(), filepath.Base(abs), dir, dir, dir)}
}

// openVersion opens a pool on dataSource and reads the schema version
// (which also opens the WAL and its index).
func openVersion(ctx context.Context, dataSource string) (*sql.DB, int, error) {
	db, err := openPool(ctx, dataSource, Options{ReadOnly: true})
	if err != nil {
		return nil, 0, err
	}
	v, err := Version(ctx, db)
	if err != nil {
		db.Close()
		return nil, 0, err
	}
	return db, v, nil
}

// openPool opens a pool on dataSource and its first connection.
func openPool(ctx context.Context, dataSource string, o Options) (*sql.DB, error) {
	db, err := sql.Open("sqlite", dataSource)
	if err != nil {
		return nil, err
	}
	n := cmp.Or(max(o.MaxConns, 0), DefaultMaxConns)
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	if err := pingRetry(ctx, db); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// pingRetry opens the first connection, retrying SQLITE_BUSY briefly:
// switching a fresh file to WAL does not consult the busy handler.
func pingRetry(ctx context.Context, db *sql.DB) error {
	deadline := time.Now().Add(DefaultBusyTimeout)
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
		delay = min(2*delay, 200*time.Millisecond)
	}
}

// Transient reports a read that met a writer initialising the WAL index (a
// reader that cannot write the -shm waits for it): nothing was read, and a
// retry succeeds. Source: https://www.sqlite.org/rescode.html#readonly_cantinit.
func Transient(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) &&
		(se.Code() == sqlite3.SQLITE_READONLY_CANTINIT || se.Code() == sqlite3.SQLITE_READONLY_RECOVERY)
}

func isBusy(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "SQLITE_BUSY") || strings.Contains(msg, "database is locked")
}

// cannotOpen reports SQLite's errors meaning, on a file that exists, that
// this user cannot open or create its -wal or -shm.
func cannotOpen(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "unable to open database file") || strings.Contains(msg, "readonly") ||
		strings.Contains(msg, "read-only") || strings.Contains(msg, "SQLITE_CANTOPEN")
}

// fileKind names a non-regular file mode for PathError.
func fileKind(m fs.FileMode) string {
	for _, k := range []struct {
		bit  fs.FileMode
		name string
	}{{fs.ModeDir, "a directory"}, {fs.ModeCharDevice, "a character device"}, {fs.ModeDevice, "a block device"},
		{fs.ModeNamedPipe, "a named pipe"}, {fs.ModeSocket, "a socket"}} {
		if m&k.bit != 0 {
			return k.name
		}
	}
	return "mode " + m.String()
}

// lowSpace is the free space below which a failure to open the database is
// reported as a full filesystem: SQLite may only say "disk I/O error".
const lowSpace = 1 << 20

// spaceHint returns " (the filesystem of dir is full: N KiB free)" when dir's
// filesystem has less than lowSpace bytes available, else "".
func spaceHint(dir string) string {
	free, _, ok := statfs(dir)
	if !ok || free >= lowSpace {
		return ""
	}
	return fmt.Sprintf(" (the filesystem of %s is full: %d KiB free)", dir, free>>10)
}

// SchemaVersionError reports a database whose schema version does not match
// the migrations given to Open: Have > Want, a newer trendfetch wrote it;
// Have < Want on a read-only open, a command that writes it must run first.
type SchemaVersionError struct {
	Path       string
	Have, Want int
}

// Error explains the mismatch and what to do about it.
func (e *SchemaVersionError) Error() string {
	if e.Have > e.Want {
		return fmt.Sprintf("database %s has schema version %d, newer than this trendfetch supports (%d); upgrade trendfetch",
			e.Path, e.Have, e.Want)
	}
	return fmt.Sprintf("database %s has schema version %d, older than this trendfetch expects (%d); run `trendfetch run` once to migrate it",
		e.Path, e.Have, e.Want)
}

// Migration is one numbered SQL file of a schema.
type Migration struct {
	Version int
	Name    string // file name, e.g. "0001_init.sql"
	SQL     string
}

var migrationName = regexp.MustCompile(`^(\d{4})_([a-z0-9_]+)\.sql$`)

// Migrations reads and validates the files at the root of fsys, in order (fs.ReadDir sorts by
// name): NNNN_name.sql (snake_case), non-empty, numbered contiguously from 0001.
func Migrations(fsys fs.FS) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("cannot read migrations: %w", err)
	}
	var migs []Migration
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		m := migrationName.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("invalid migration file name %q: want NNNN_name.sql", e.Name())
		}
		v, _ := strconv.Atoi(m[1])
		b, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return nil, fmt.Errorf("cannot read migration %s: %w", e.Name(), err)
		}
		if len(b) == 0 {
			return nil, fmt.Errorf("migration %s is empty", e.Name())
		}
		if v != len(migs)+1 {
			return nil, fmt.Errorf("migrations are not numbered contiguously from 0001: %s is number %d", e.Name(), len(migs)+1)
		}
		migs = append(migs, Migration{Version: v, Name: e.Name(), SQL: string(b)})
	}
	if len(migs) == 0 {
		return nil, fmt.Errorf("no migrations found")
	}
	return migs, nil
}

// createSchemaMigrations creates the bookkeeping table (both engines).
const createSchemaMigrations = `CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    applied_at TEXT NOT NULL
)`

// Querier is satisfied by *sql.DB, *sql.Conn and *sql.Tx.
type Querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Version returns the schema version of a database: the highest applied
// migration, 0 when it has no schema_migrations table (a new file).
func Version(ctx context.Context, q Querier) (int, error) {
	var n int
	err := q.QueryRowContext(ctx,
		`SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations'`).Scan(&n)
	if err != nil || n == 0 {
		return 0, err
	}
	var v sql.NullInt64
	err = q.QueryRowContext(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&v)
	return int(v.Int64), err
}

// Migrate brings db up to len(migs), each pending migration with its schema_migrations row in one
// (on SQLite BEGIN IMMEDIATE) transaction that re-reads the version (version: Version on SQLite),
// so a concurrent process applying it finds it done. Errors: *SchemaVersionError if newer.
func Migrate(ctx context.Context, db *sql.DB, path string, migs []Migration,
	version func(context.Context, Querier) (int, error)) error {
	want := len(migs)
	v, err := version(ctx, db)
	if err != nil {
		return fmt.Errorf("cannot read schema version of %s: %w", path, err)
	}
	if v > want {
		return &SchemaVersionError{Path: path, Have: v, Want: want}
	}
	for _, m := range migs[v:] {
		if err := apply(ctx, db, path, m, want, version); err != nil {
			return err
		}
	}
	return nil
}

// foreignKeysOff, as the first line of a migration file, applies it with foreign keys off (on a
// connection of its own: the pragma is a no-op in a transaction) and checks every reference before
// it commits: how SQLite's lang_altertable.html rebuilds a table that others reference.
const foreignKeysOff = "-- sqlitedb: foreign_keys off\n"

func apply(ctx context.Context, db *sql.DB, path string, m Migration, want int,
	version func(context.Context, Querier) (int, error)) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("cannot begin migration %s: %w", m.Name, err)
	}
	defer conn.Close()
	fkOff := strings.HasPrefix(m.SQL, foreignKeysOff)
	if fkOff {
		if _, err := conn.ExecContext(ctx, `PRAGMA foreign_keys = OFF`); err != nil {
			return fmt.Errorf("cannot begin migration %s: %w", m.Name, err)
		}
		defer func() {
			if _, err := conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA foreign_keys = ON`); err != nil {
				conn.Raw(func(any) error { return driver.ErrBadConn }) //nolint:errcheck // drops the connection from the pool
			}
		}()
	}
	tx, err := conn.BeginTx(ctx, nil) // BEGIN IMMEDIATE: takes the write lock now
	if err != nil {
		return fmt.Errorf("cannot begin migration %s: %w", m.Name, err)
	}
	defer tx.Rollback() //nolint:errcheck // no-op after Commit
	if _, err := tx.ExecContext(ctx, createSchemaMigrations); err != nil {
		return fmt.Errorf("cannot create schema_migrations: %w", err)
	}
	v, err := version(ctx, tx)
	switch {
	case err != nil:
		return fmt.Errorf("cannot read schema version of %s: %w", path, err)
	case v > want:
		return &SchemaVersionError{Path: path, Have: v, Want: want}
	case v >= m.Version:
		return nil // another process applied it while we waited for the lock
	case v != m.Version-1:
		return fmt.Errorf("cannot apply migration %s: database is at version %d", m.Name, v)
	}
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return fmt.Errorf("migration %s failed: %w", m.Name, err)
	}
	if fkOff {
		var table string
		switch err := tx.QueryRowContext(ctx, `SELECT "table" FROM pragma_foreign_key_check`).Scan(&table); {
		case err == nil:
			return fmt.Errorf("migration %s failed: it leaves rows of %s referring to rows that do not exist", m.Name, table)
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("migration %s failed: cannot check foreign keys: %w", m.Name, err)
		}
	}
	if _, err := tx.ExecContext(ctx,
		`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
		m.Version, m.Name, time.Now().UTC().Format("2006-01-02T15:04:05.000000Z")); err != nil {
		return fmt.Errorf("cannot record migration %s: %w", m.Name, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("cannot commit migration %s: %w", m.Name, err)
	}
	return nil
}
