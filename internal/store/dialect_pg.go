package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	neturl "net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/trendfetch/trendfetch/internal/sqlitedb"
	"github.com/trendfetch/trendfetch/migrations"
)

// pgDialect is PostgreSQL's (docs/design.md §10a): several hosts write at
// once, so the storage policy takes turns under policyLockKey and locks
// what it picks; exports read a cursor (one query at a time on a
// connection); search runs on video_search (search_pg.go).
var pgDialect = &dialect{
	engine:     PostgreSQL,
	callCount:  `CAST(calls::jsonb ->> ?1 AS BIGINT)`,
	pickLocked: ` FOR UPDATE OF {table} SKIP LOCKED`,
	sampleLock: ` FOR KEY SHARE OF v`,
	lockPolicy: lockPolicyPG,
	check:      checkPG,
	scanTx:     scanTxPG,
	captures:   capturesPG,
	searcher:   newPGSearcher,
	transient:  func(error) bool { return false },
	onVideo:    func(x string) string { return "e.page_videos @> ARRAY[" + x + "] AND e.video = " + x },
	hitEntries: `entry_pages p ON p.video @> ARRAY[v.rowid] CROSS JOIN LATERAL (
    SELECT p.capture_id, p.first_rank + i - 1 AS rank FROM unnest(array_positions(p.video, v.rowid)) i) e`,
	// The captures' deletion deletes their pages (ON DELETE CASCADE): this counts their entries.
	deleteEntries: `SELECT FROM entries WHERE capture_id IN ({ids})`,
	entries:       entriesPG,
	savePage:      savePagePG,
}

// entriesPG stores p as one row of entry_pages: arrays in rank order, the videos' rowids and
// current text versions found by id (subqueries: index lookups, as upsertStatsSQL), the
// statistics as given. Its transaction commits without waiting for the disk: the run's last
// commit, synchronous, makes it durable (docs/design.md §10a).
func entriesPG(p Snapshot) []stmt {
	n := len(p.Videos)
	ids, views, likes, comments := make([]string, n), make([]*int64, n), make([]*int64, n), make([]*int64, n)
	for i, v := range p.Videos {
		ids[i], views[i], likes[i], comments[i] = v.ID, v.Views, v.Likes, v.Comments
	}
	return p.entryArgs([]stmt{{query: `
WITH async AS (SELECT set_config('synchronous_commit', 'off', true))
INSERT INTO entry_pages (capture_id, first_rank, video, text, view_count, like_count, comment_count)
SELECT (SELECT id FROM captures c WHERE c.run_id = ?6 AND c.region = ?7 AND c.kind = ?8 AND c.query = ?9),
       CAST(?1 AS BIGINT), array_agg((SELECT rowid FROM videos WHERE id = x.id) ORDER BY x.i),
       array_agg((SELECT text_version FROM videos WHERE id = x.id) ORDER BY x.i),
       CAST(?2 AS BIGINT[]), CAST(?3 AS BIGINT[]), CAST(?4 AS BIGINT[])
FROM async, unnest(CAST(?5 AS TEXT[])) WITH ORDINALITY AS x (id, i)`, args: []any{p.FirstRank, views, likes, comments, ids}, rows: n}})
}

// savePagePG sends a page's statements in one round trip: a pgx batch, one implicit transaction
// that an error rolls back whole.
func savePagePG(ctx context.Context, s *Store, stmts []stmt) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		var b pgx.Batch
		for _, x := range stmts {
			b.Queue(rebind(x.query), x.args...)
		}
		res := dc.(rebindConn).Conn.Conn().SendBatch(ctx, &b)
		defer res.Close()
		for _, x := range stmts {
			tag, err := res.Exec()
			if err == nil && x.check != nil {
				err = x.check(tag.RowsAffected())
			}
			if err != nil {
				return err
			}
		}
		return res.Close()
	})
}

// lockPolicyPG takes the transaction's turn among hosts applying the policy;
// errCopying while a copy holds (or waits for) copyLockKey. The copy lock is tried shared: the
// transaction before this one may still hold it for an instant after it freed policyLockKey
// (a commit frees its locks one by one).
func lockPolicyPG(ctx context.Context, tx *sql.Tx) error {
	var free bool
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(?)`, int64(policyLockKey)); err != nil {
		return err
	}
	if err := tx.QueryRowContext(ctx, `SELECT pg_try_advisory_xact_lock_shared(?)`, int64(copyLockKey)).Scan(&free); err != nil || free {
		return err
	}
	return errCopying
}

// checkPG verifies that video_search matches every video's text.
func checkPG(ctx context.Context, db *sql.DB) error {
	var stale int64
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM videos v LEFT JOIN video_search x ON x.video_rowid = v.rowid
WHERE x.doc IS DISTINCT FROM search_doc(v.title, v.channel_title, v.tags, v.description)
   OR x.tri IS DISTINCT FROM search_fold(v.title || E'\n' || v.channel_title)`).Scan(&stale); err != nil {
		return fmt.Errorf("search index check: %w", err)
	}
	if stale > 0 {
		return fmt.Errorf("search index video_search check failed: %d videos not indexed as their text is", stale)
	}
	return nil
}

// scanTxPG is a REPEATABLE READ transaction: one snapshot.
func scanTxPG(ctx context.Context, conn *sql.Conn) (*sql.Tx, func(), error) {
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true, Isolation: sql.LevelRepeatableRead})
	return tx, func() {}, err
}

// capturesPG declares a cursor the captureList fetches from.
func capturesPG(ctx context.Context, tx *sql.Tx, query string, args []any) (*captureList, error) {
	if _, err := tx.ExecContext(ctx, `DECLARE export_captures NO SCROLL CURSOR FOR `+query, args...); err != nil {
		return nil, err
	}
	return &captureList{tx: tx}, nil
}

// postgresFS is the PostgreSQL schema; a variable so tests can substitute one.
var postgresFS, _ = fs.Sub(migrations.PostgresFS, "postgres")

// migrationLockKey is the pg_advisory_lock key migrations hold, so hosts
// starting together migrate once ("trendfetch" in ASCII, cut to 63 bits).
const migrationLockKey = 0x7472656e64666574

// OpenTimeout bounds opening a PostgreSQL store (connecting, the migration lock, migrating),
// or the URL's connect_timeout when it has one: a server that accepts connections and never answers
// (stopped, wedged, a host frozen mid-migration holding the lock) ends the command with an error
// naming the wait instead of piling up processes. A variable so tests can shorten it.
var OpenTimeout = 20 * time.Second

// sessionDefaults are the parameters of every PostgreSQL connection the URL does not set (as a
// parameter or in options): every statement bounded, a wait for a lock another session holds
// more tightly, and work_mem for a search, which sorts up to SearchCandidates rows with their
// tsvector (~1 KB each) in memory, not on disk as the default 4MB would.
var sessionDefaults = map[string]string{"statement_timeout": "5min", "lock_timeout": "10s", "work_mem": "32MB"}

// pgConfig is url's configuration (libpq syntax, TLS parameters passed to pgx) with
// sessionDefaults, read-only transactions when readOnly.
func pgConfig(url string, readOnly bool) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, urlError(err)
	}
	if readOnly {
		cfg.RuntimeParams["default_transaction_read_only"] = "on"
	}
	for k, v := range sessionDefaults {
		if _, set := cfg.RuntimeParams[k]; !set && !strings.Contains(cfg.RuntimeParams["options"], k) {
			cfg.RuntimeParams[k] = v
		}
	}
	return cfg, nil
}

// openPostgres connects to url (pgConfig), checks that the server answers, and migrates the
// schema unless readOnly (then the schema must be current), within OpenTimeout.
func openPostgres(ctx context.Context, url string, readOnly bool) (*Store, error) {
	cfg, err := pgConfig(url, readOnly)
	if err != nil {
		return nil, err
	}
	bound := cmp.Or(cfg.ConnectTimeout, OpenTimeout)
	errWait := fmt.Errorf("no answer from PostgreSQL within %s while connecting, taking the migration lock or migrating", bound)
	ctx, cancel := context.WithTimeoutCause(ctx, bound, errWait)
	defer cancel()
	db := sql.OpenDB(rebindConnector{stdlib.GetConnector(*cfg)})
	db.SetMaxOpenConns(16)
	db.SetMaxIdleConns(16)
	db.SetConnMaxIdleTime(5 * time.Minute)
	name := cfg.Host + "/" + cfg.Database
	fail := func(err error) (*Store, error) {
		db.Close()
		if errors.Is(context.Cause(ctx), errWait) {
			err = fmt.Errorf("%w: %v", errWait, err)
		}
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
	return &Store{db: db, path: name, d: pgDialect}, nil
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
	release, err := advisoryLock(ctx, db, migrationLockKey)
	if err != nil {
		return fmt.Errorf("cannot take the migration lock: %w", err)
	}
	defer release()
	return sqlitedb.Migrate(ctx, db, name, migs, postgresVersion)
}

// advisoryLock takes the session advisory lock key (pg_advisory_lock) on a connection of db,
// held until release.
func advisoryLock(ctx context.Context, db *sql.DB, key int64) (release func(), err error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock(?)`, key); err != nil {
		conn.Close()
		return nil, err
	}
	return func() {
		conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(?)`, key) //nolint:errcheck
		conn.Close()
	}, nil
}
