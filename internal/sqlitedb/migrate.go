package sqlitedb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

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

// Migrations reads and validates the files at the root of fsys, in order:
// every one named NNNN_name.sql (lower-case snake_case), non-empty, numbered
// contiguously from 0001. Their number is the schema version they make.
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
		migs = append(migs, Migration{Version: v, Name: e.Name(), SQL: string(b)})
	}
	sort.Slice(migs, func(i, j int) bool { return migs[i].Version < migs[j].Version })
	for i, m := range migs {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migrations are not numbered contiguously from 0001: %s is number %d", m.Name, i+1)
		}
	}
	if len(migs) == 0 {
		return nil, fmt.Errorf("no migrations found")
	}
	return migs, nil
}

// CreateSchemaMigrations creates the bookkeeping table (both engines): one
// row per applied migration, written in the migration's own transaction.
const CreateSchemaMigrations = `CREATE TABLE IF NOT EXISTS schema_migrations (
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
	if err := q.QueryRowContext(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&v); err != nil {
		return 0, err
	}
	return int(v.Int64), nil
}

// migrate brings db up to len(migs), each pending migration with its
// schema_migrations row in one BEGIN IMMEDIATE transaction that re-reads the
// version, so a concurrent process applying it finds it done.
func migrate(ctx context.Context, db *sql.DB, path string, migs []Migration) error {
	want := len(migs)
	v, err := Version(ctx, db)
	if err != nil {
		return fmt.Errorf("cannot read schema version of %s: %w", path, err)
	}
	if v > want {
		return &SchemaVersionError{Path: path, Have: v, Want: want}
	}
	for _, m := range migs[v:] {
		if err := apply(ctx, db, path, m, want); err != nil {
			return err
		}
	}
	return nil
}

// foreignKeysOff, as the first line of a migration file, applies it with
// foreign keys off (on a connection of its own: the pragma is a no-op in a
// transaction) and checks every reference before it commits: how SQLite's
// lang_altertable.html rebuilds a table that others reference.
const foreignKeysOff = "-- sqlitedb: foreign_keys off\n"

func apply(ctx context.Context, db *sql.DB, path string, m Migration, want int) error {
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
	if _, err := tx.ExecContext(ctx, CreateSchemaMigrations); err != nil {
		return fmt.Errorf("cannot create schema_migrations: %w", err)
	}
	v, err := Version(ctx, tx)
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
