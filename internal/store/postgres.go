package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io/fs"
	neturl "net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/trendfetch/trendfetch/internal/sqlitedb"
	"github.com/trendfetch/trendfetch/migrations"
)

// IsPostgresURL reports whether a database setting names a PostgreSQL
// server (postgres:// or postgresql://) rather than a SQLite file.
func IsPostgresURL(database string) bool {
	return strings.HasPrefix(database, "postgres://") || strings.HasPrefix(database, "postgresql://")
}

// postgresFS is the PostgreSQL schema; a variable so tests can substitute one.
var postgresFS, _ = fs.Sub(migrations.PostgresFS, "postgres")

// migrationLockKey is the pg_advisory_lock key migrations hold, so hosts
// starting together migrate once ("trendfetch" in ASCII, cut to 63 bits).
const migrationLockKey = 0x7472656e64666574

// openPostgres connects to url (libpq syntax, TLS parameters passed to pgx),
// checks that the server answers, and migrates the schema unless readOnly
// (then every transaction is read-only and the schema must be current).
func openPostgres(ctx context.Context, url string, readOnly bool) (*Store, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, urlError(err)
	}
	if readOnly {
		cfg.RuntimeParams["default_transaction_read_only"] = "on"
	}
	if _, set := cfg.RuntimeParams["work_mem"]; !set {
		// A search sorts up to SearchCandidates rows with their tsvector
		// (~1 KB each): in memory, not on disk as the default 4MB would.
		cfg.RuntimeParams["work_mem"] = "32MB"
	}
	db := sql.OpenDB(rebindConnector{stdlib.GetConnector(*cfg)})
	db.SetMaxOpenConns(16)
	db.SetMaxIdleConns(16)
	db.SetConnMaxIdleTime(5 * time.Minute)
	name := cfg.Host + "/" + cfg.Database
	fail := func(err error) (*Store, error) {
		db.Close()
		return nil, fmt.Errorf("PostgreSQL database %s: %w", name, err)
	}
	if err := db.PingContext(ctx); err != nil {
		return fail(err)
	}
	migs, err := sqlitedb.Migrations(postgresFS)
	if err != nil {
		return fail(err)
	}
	want := len(migs)
	if !readOnly {
		if err := migratePostgres(ctx, db, name, migs); err != nil {
			return fail(err)
		}
	}
	have, err := postgresVersion(ctx, db)
	if err != nil {
		return fail(err)
	}
	if have != want {
		if have == 0 && readOnly {
			return fail(&NoDatabaseError{Path: name, Tables: true})
		}
		return fail(&SchemaVersionError{Path: name, Have: have, Want: want})
	}
	return &Store{db: db, path: name, pg: true}, nil
}

// URLError is a PostgreSQL URL that cannot be used as written (port,
// sslmode, %-escape, sslrootcert): a configuration error. Reason never
// quotes the URL.
type URLError struct{ Reason string }

// Error is "the PostgreSQL URL ...: REASON; want ...".
func (e *URLError) Error() string {
	return "the PostgreSQL URL cannot be used: " + e.Reason + "; fix it as postgres://user:password@host:5432/dbname?sslmode=verify-full&sslrootcert=/path/ca.pem (special characters in the password %-escaped)"
}

// urlError is pgx's parse error without the URL it quotes: pgx's own
// message and cause, a *url.Error reduced to its cause.
func urlError(err error) *URLError {
	msg := err.Error()
	if i := strings.LastIndex(msg, "`: "); i >= 0 {
		msg = msg[i+3:]
	}
	var ue *neturl.Error
	if errors.As(err, &ue) {
		msg = strings.Replace(msg, ue.Error(), ue.Err.Error(), 1)
	}
	return &URLError{Reason: msg}
}

// postgresVersion is the highest applied migration, 0 with no schema.
func postgresVersion(ctx context.Context, q sqlitedb.Querier) (int, error) {
	var exists bool
	if err := q.QueryRowContext(ctx, `SELECT to_regclass('schema_migrations') IS NOT NULL`).Scan(&exists); err != nil || !exists {
		return 0, err
	}
	var v sql.NullInt64
	err := q.QueryRowContext(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&v)
	return int(v.Int64), err
}

// migratePostgres is sqlitedb.Migrate under the advisory lock.
func migratePostgres(ctx context.Context, db *sql.DB, name string, migs []sqlitedb.Migration) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock(?)`, int64(migrationLockKey)); err != nil {
		return fmt.Errorf("cannot take the migration lock: %w", err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(?)`, int64(migrationLockKey)) //nolint:errcheck
	return sqlitedb.Migrate(ctx, db, name, migs, postgresVersion)
}

// rebindConnector hands out connections that rewrite the store's SQLite
// placeholders (? and ?NNN) into PostgreSQL's ($N).
type rebindConnector struct{ driver.Connector }

func (c rebindConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return rebindConn{conn.(*stdlib.Conn)}, nil
}

// rebindConn is a pgx connection whose statements are rebound first
// (database/sql prefers PrepareContext to Prepare); the rest is pgx's.
type rebindConn struct{ *stdlib.Conn }

func (c rebindConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return c.Conn.PrepareContext(ctx, rebind(query))
}

func (c rebindConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	return c.Conn.ExecContext(ctx, rebind(query), args)
}

func (c rebindConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	return c.Conn.QueryContext(ctx, rebind(query), args)
}

// CheckNamedValue stores a bool as 1 or 0: the columns SQLite knows as
// booleans are integers in both schemas.
func (c rebindConn) CheckNamedValue(v *driver.NamedValue) error {
	if b, ok := v.Value.(bool); ok {
		v.Value = int64(0)
		if b {
			v.Value = int64(1)
		}
	}
	return c.Conn.CheckNamedValue(v)
}

// rebound caches rebind's answers: the store's statements are few.
var rebound sync.Map

// rebindable matches what rebind rewrites (? and ?NNN) and what it leaves
// alone: string literals, quoted identifiers and comments.
var rebindable = regexp.MustCompile(`'[^']*(?:'|$)|"[^"]*(?:"|$)|--[^\n]*|\?[0-9]*`)

// rebind rewrites ?NNN as $NNN and each bare ? as the next $N, outside
// string literals, quoted identifiers and comments.
func rebind(query string) string {
	if !strings.Contains(query, "?") {
		return query
	}
	if r, ok := rebound.Load(query); ok {
		return r.(string)
	}
	n := 0
	r := rebindable.ReplaceAllStringFunc(query, func(m string) string {
		switch {
		case m[0] != '?':
			return m
		case len(m) > 1:
			return "$" + m[1:]
		}
		n++
		return "$" + strconv.Itoa(n)
	})
	if len(query) < 4096 {
		rebound.Store(query, r)
	}
	return r
}
