// Package sqlitedb opens trendfetch's SQLite databases (the store and
// quota.db) one way (docs/design.md §6): modernc.org/sqlite, WAL, a busy
// timeout, foreign keys, every pragma declared once in the DSN, and numbered
// *.sql migrations, each applied with its version row in one transaction.
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
// lock before failing with SQLITE_BUSY: generous, as write transactions are
// short (one chart page, one admission).
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
}

// PathError reports a database path that cannot be used as given (not a
// regular file, or a read-only open this user lacks the permissions for): a
// configuration error (exit 2). Reason is one line saying what to do.
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

// dsn is the data source name for the absolute path abs, a file: URI whose
// pragmas run on every new connection. synchronous(NORMAL) in WAL mode may
// lose the last commits on power loss, never corrupts; _txlock=immediate
// takes the write lock up front, waiting via busy_timeout (a deferred
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
	return u.String() + "?" + strings.Join(q, "&")
}

// Open opens the SQLite database at path (a file path, not a URI).
// Read-write (the default) creates the parent directory (mode 0700) and the
// file if needed and applies o.Migrations (migrate). Errors: *PathError for
// an empty path, not a regular file or a reader without the permissions it
// needs; *NoDatabaseError (read-only) when there is no file or no schema;
// *SchemaVersionError when the schema is newer than o.Migrations, or
// (read-only) older.
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
		if err := migrate(ctx, db, path, migs); err != nil {
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
		switch {
		case errors.Is(walErr, fs.ErrNotExist) && readOnlyFS(filepath.Dir(abs)):
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

// Transient reports a read that met a writer initialising or recovering the
// WAL index, which a reader that cannot write the -shm may not do itself:
// nothing was read, and the same read succeeds a moment later. Source:
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

// lowSpace is the free space below which a failure to open or write the
// database is reported as the filesystem being full: SQLite may only say
// "disk I/O error" (e.g. SQLITE_IOERR_SHMSIZE when the -shm file cannot
// grow), which points at hardware instead of the real cause.
const lowSpace = 1 << 20

// spaceHint returns " (the filesystem of dir is full: N KiB free)" when dir's
// filesystem has less than lowSpace bytes available, else "".
func spaceHint(dir string) string {
	free, ok := freeBytes(dir)
	if !ok || free >= lowSpace {
		return ""
	}
	return fmt.Sprintf(" (the filesystem of %s is full: %d KiB free)", dir, free>>10)
}
