// Package sqlitedb opens trendfetch's SQLite databases (the store and
// quota.db) one way: modernc.org/sqlite, WAL, a busy timeout, foreign keys,
// every pragma declared once in the DSN (see dsn), and numbered *.sql
// migrations applied from an fs.FS, each with its version row in one
// transaction.
//
// Start with Open:
//
//	db, err := sqlitedb.Open(ctx, path, sqlitedb.Options{Migrations: migrations.FS})
//	ro, err := sqlitedb.Open(ctx, path, sqlitedb.Options{ReadOnly: true, Migrations: migrations.FS})
//
// A read-write open creates the file (and its directory, mode 0700) and
// migrates it; a read-only open creates nothing, writes nothing and
// requires the schema to be current. Errors a person can fix are typed:
// *PathError (the path is not a usable database file, or this user lacks
// what a reader needs), *NoDatabaseError (nothing there yet, wraps
// fs.ErrNotExist) and *SchemaVersionError.
package sqlitedb

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
	"time"

	"modernc.org/sqlite" // registers the "sqlite" database/sql driver
	sqlite3 "modernc.org/sqlite/lib"
)

// DefaultBusyTimeout is how long a connection waits for another writer's
// lock before failing with SQLITE_BUSY ("database is locked"). trendfetch's
// write transactions are short (one chart page, one admission), so 10 s is
// generous even with many cron processes starting in the same minute.
const DefaultBusyTimeout = 10 * time.Second

// DefaultMaxConns is the connection pool size when Options.MaxConns is 0.
// Each connection runs the DSN's pragmas once and keeps its page cache, so
// all stay open when idle; SQLite serialises writers anyway and WAL readers
// run in parallel, so a handful is plenty.
const DefaultMaxConns = 8

// Options says how Open opens a database. The zero value opens it for
// reading and writing, without schema management.
type Options struct {
	// ReadOnly opens an existing file without creating or writing anything
	// (no directory, file or schema). The schema must be current.
	ReadOnly bool
	// Migrations holds the schema as NNNN_name.sql files at its root,
	// numbered contiguously from 0001 (see Open). nil: no schema handling.
	Migrations fs.FS
	// MaxConns overrides DefaultMaxConns (1 makes this process's goroutines
	// queue in database/sql rather than on the file lock).
	MaxConns int
	// MmapBytes, when > 0, maps up to that many bytes of the file
	// (mmap_size): reads then bypass SQLite's page cache, which modernc
	// shares between all connections of a process behind one mutex. The
	// file must never shrink under a map (no VACUUM while readers run).
	MmapBytes int64
}

// PathError reports a database path that cannot be used as given: not a
// regular file (/dev/null, a directory), or a read-only open that this user
// lacks the permissions for. Reason is one line that says what to do. It is
// a configuration error (exit 2).
type PathError struct {
	Path   string
	Reason string
}

// Error returns "database PATH: REASON".
func (e *PathError) Error() string { return fmt.Sprintf("database %s: %s", e.Path, e.Reason) }

// NoDatabaseError reports a read-only open of a path where no database
// exists yet (no file, or a file without schema). It wraps fs.ErrNotExist.
type NoDatabaseError struct {
	Path string
}

// Error says where the database was expected and what creates it.
func (e *NoDatabaseError) Error() string {
	return fmt.Sprintf("no database at %s; run `trendfetch run` first", e.Path)
}

// Unwrap returns fs.ErrNotExist, so errors.Is(err, fs.ErrNotExist) holds.
func (e *NoDatabaseError) Unwrap() error { return fs.ErrNotExist }

// dsn builds the modernc.org/sqlite data source name for the absolute path
// abs. The path is given as a file: URI, so '?', '#' and '%' in it are
// escaped rather than parsed. The driver runs the pragmas on every new
// connection, busy_timeout first:
//
//   - busy_timeout: wait for a lock held by another connection or process
//     instead of failing at once with SQLITE_BUSY ("database is locked").
//   - foreign_keys(1): enforce references (SQLite leaves them off per
//     connection by default).
//   - journal_mode(WAL), read-write only: readers never block the writer
//     and the writer never blocks readers; persistent in the file, so a
//     no-op after the first open.
//   - synchronous(NORMAL), read-write only: in WAL mode durable against
//     application crashes; a power loss may lose the last commits but
//     never corrupts.
//   - mmap_size, when asked: see Options.MmapBytes.
//
// _txlock=immediate (read-write) makes BeginTx issue BEGIN IMMEDIATE, which
// takes the write lock up front, waiting via busy_timeout: a deferred
// transaction that reads and then writes can fail with SQLITE_BUSY on the
// lock upgrade without the busy handler being able to help. Reads outside
// transactions are unaffected.
//
// mode=ro (read-only) opens the file read-only: no statement can write it
// and the last reader to close never checkpoints. readonly_shm=1 is added
// by Open only when the WAL index (-shm) exists but this user cannot write
// it (see openReadOnly).
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
	return u.String() + "?" + strings.Join(q, "&")
}

// Open opens the SQLite database at path (a file path, not a URI).
//
// Read-write (the default): it creates the parent directory (mode 0700) and
// the file if needed, and applies the pending migrations of o.Migrations,
// each with its schema_migrations row in one BEGIN IMMEDIATE transaction,
// so that processes opening a fresh file at once all succeed. When the
// schema is current this costs one version read.
//
// Read-only: it creates and writes nothing. A reader that is not the
// writer (a service user) needs the WAL index: if this user cannot write
// it, it is read as-is while it exists (SQLite's readonly_shm mode, which
// stays correct while writers write); if it does not exist and cannot be
// created, Open refuses with a *PathError saying what to change. It opens
// the file as immutable only on a read-only filesystem (without a -wal),
// where no writer can come: anywhere else that returned wrong data or
// "database disk image is malformed" once a writer wrote.
//
// Errors: *PathError for an empty path, a path that is not a regular file
// or a reader without the permissions it needs; *NoDatabaseError (read-only)
// when there is no file or no schema; *SchemaVersionError when the schema
// is newer than o.Migrations, or (read-only) older; other errors are I/O or
// SQLite failures.
func Open(ctx context.Context, path string, o Options) (*sql.DB, error) {
	if path == "" {
		return nil, &PathError{Path: `""`, Reason: "empty path; give the path of a database file"}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("cannot open database %s: %w", path, err)
	}
	var migs []migration
	if o.Migrations != nil {
		if migs, err = loadMigrations(o.Migrations); err != nil {
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
		if err := migrate(ctx, db, path, migs); err != nil {
			db.Close()
			return nil, err
		}
	}
	return db, nil
}

// openReadOnly is Open with o.ReadOnly, once path is known to be a file.
func openReadOnly(ctx context.Context, path, abs string, o Options, migs []migration) (*sql.DB, error) {
	db, v, err := openVersion(ctx, dsn(abs, o))
	if err != nil && cannotOpen(err) {
		_, walErr := os.Stat(abs + "-wal")
		_, shmErr := os.Stat(abs + "-shm")
		switch {
		case errors.Is(walErr, fs.ErrNotExist) && readOnlyFS(filepath.Dir(abs)):
			// Read-only media: no process can write the file and no WAL
			// holds pending commits, so treating it as immutable (no
			// locks, no -shm) is exact. Anywhere else a writer may come.
			db, v, err = openVersion(ctx, dsn(abs, o)+"&immutable=1")
		case walErr != nil || shmErr != nil:
			return nil, readerNeeds(path, abs)
		default:
			// The WAL and its index exist, written by a writer we cannot
			// write as: read the index without writing it.
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
	n := o.MaxConns
	if n <= 0 {
		n = DefaultMaxConns
	}
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	if err := pingRetry(ctx, db); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// pingRetry opens the first connection. Switching a fresh file to WAL needs
// an exclusive lock and may report SQLITE_BUSY without consulting the busy
// handler when another process is doing the same thing, so retry briefly.
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

// Transient reports a read that met another process initialising or
// recovering the WAL index, which a reader that cannot write the -shm may
// not do itself (SQLITE_READONLY_CANTINIT, SQLITE_READONLY_RECOVERY: a
// writer that just opened the database is rebuilding it). Nothing was read;
// the same read succeeds a moment later. Source:
// https://www.sqlite.org/rescode.html#readonly_cantinit.
func Transient(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() {
	case sqlite3.SQLITE_READONLY_CANTINIT, sqlite3.SQLITE_READONLY_RECOVERY:
		return true
	}
	return false
}

func isBusy(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "SQLITE_BUSY") || strings.Contains(msg, "database is locked")
}

// cannotOpen reports SQLite's "unable to open database file" and read-only
// errors, which on a file that exists mean this user cannot open or create
// its -wal or -shm.
func cannotOpen(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "unable to open database file") || strings.Contains(msg, "readonly") ||
		strings.Contains(msg, "read-only") || strings.Contains(msg, "SQLITE_CANTOPEN")
}

// fileKind names a non-regular file mode for PathError.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "mode " + m.String()
}
