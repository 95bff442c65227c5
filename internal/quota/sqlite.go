package quota

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the pure-Go "sqlite" database/sql driver
)

// SQLiteBackend is the embedded Backend: the sliding-window logs of every
// credential live in one SQLite database file on the local host (the quota
// DB, separate from the video store), so single-host cron works with zero
// setup (DESIGN.md §4 "Embedded backend").
//
// Each decision is one BEGIN IMMEDIATE transaction, so decisions of every
// process and goroutine using the same file are serialized and exact. The
// clock is the local clock at microsecond precision, read after the write
// lock is taken; while it reads more than ClockStepTolerance earlier than a
// charged bucket's newest entry, nothing is admitted into that bucket
// (doc.go, "Clock steps"). It is safe for concurrent use.
//
// Storage: table quota_log holds one row per admitted call per bucket with
// its cost, plus running totals (cum: units, seq: entries) per
// (credential, bucket), so Used, Entries and Retry-After are index lookups,
// O(log n) whatever the number of entries in the window. A denial rolls its
// transaction back: it writes nothing, not even the eviction of expired
// entries. Admissions evict entries that are both out of the window and from
// before the last Pacific midnight (entries of the current Pacific day are
// kept so that UsedToday stays exact for short sliding windows).
type SQLiteBackend struct {
	db    *sql.DB
	path  string
	clock func() time.Time

	// stmts holds the statements below, prepared once at open; tx.StmtContext
	// binds them to a transaction's connection.
	stmts map[string]*sql.Stmt
}

// SQLiteOption configures NewSQLite.
type SQLiteOption func(*sqliteOptions)

type sqliteOptions struct {
	clock       func() time.Time
	busyTimeout time.Duration
	readOnly    bool
}

// WithSQLiteReadOnly opens an existing quota database for reading only
// (quota status): nothing is created (no directory, file or schema) and no
// connection can write; on read-only media, where a WAL database's -shm file
// cannot be created, the file is opened as immutable. Reserve and the other
// writes then fail with ErrUnavailable. A missing file or schema is an error
// wrapping fs.ErrNotExist.
func WithSQLiteReadOnly() SQLiteOption {
	return func(o *sqliteOptions) { o.readOnly = true }
}

// WithClock replaces the local clock (time.Now) used for every decision;
// tests inject a fake clock to move time without sleeping. The clock is read
// at microsecond precision; it should not go backwards. If it does by at
// most ClockStepTolerance, new entries are stamped no earlier than the
// newest stored entry (stricter, never more admitted); if it does by more,
// Reserve denies with Decision.ClockBehind until the clock has caught up
// (doc.go, "Clock steps").
func WithClock(now func() time.Time) SQLiteOption {
	return func(o *sqliteOptions) { o.clock = now }
}

// WithSQLiteBusyTimeout sets how long a decision waits for another process holding
// the database write lock before it fails with ErrUnavailable (default 10 s).
// It is rounded down to whole milliseconds.
func WithSQLiteBusyTimeout(d time.Duration) SQLiteOption {
	return func(o *sqliteOptions) { o.busyTimeout = d }
}

// DefaultSQLiteBusyTimeout is the default of WithSQLiteBusyTimeout.
const DefaultSQLiteBusyTimeout = 10 * time.Second

// sqliteSchemaVersion is stored in PRAGMA user_version once the schema exists,
// so opening an existing database costs one pragma read, not DDL. Version 2
// added quota_log.rid (Refund); a version 1 database is migrated by the
// first writer that opens it (sqliteMigrateV2), and read-only opens accept
// either. A binary from before version 2 still reads and writes a version
// 2 database: its rows get rid 0, which no Reservation names. Version 3
// added quota_counter (counter buckets, counter_sqlite.go; sqliteMigrateV3);
// a read-only open of an older database sees no counters.
const sqliteSchemaVersion = 3

// sqliteSchema is created idempotently by NewSQLite.
//
// quota_log: one row per admitted call per bucket. For each (credential,
// bucket), rows are ordered by cum, and ts_us never decreases along that
// order, so the rows in a window are a contiguous range:
//   - ts_us: local clock in microseconds since the Unix epoch;
//   - cost:  units of the call in this bucket (>= 1);
//   - cum:   running total of cost (the sum of cost up to and including this
//     row since the log was last empty), strictly increasing, hence also the
//     unique member of the entry;
//   - seq:   running count of entries, likewise;
//   - rid:   a random non-zero 63-bit id, the entry's identity for Refund
//     (cum and seq shift when an earlier entry is refunded; rid never does).
//
// A refund deletes its row and subtracts its cost from cum (and 1 from
// seq) of every later row of the bucket, so the prefix sums stay exact.
//
// quota_exhausted: credential -> until_us marker set by MarkExhausted.
//
// quota_counter: the counters of counter buckets (sqliteMigrateV3).
const sqliteSchema = `
CREATE TABLE IF NOT EXISTS quota_log (
	credential TEXT    NOT NULL,
	bucket     TEXT    NOT NULL,
	cum        INTEGER NOT NULL,
	seq        INTEGER NOT NULL,
	ts_us      INTEGER NOT NULL,
	cost       INTEGER NOT NULL,
	rid        INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (credential, bucket, cum)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS quota_log_window ON quota_log (credential, bucket, ts_us);
CREATE TABLE IF NOT EXISTS quota_exhausted (
	credential TEXT    NOT NULL PRIMARY KEY,
	until_us   INTEGER NOT NULL
) WITHOUT ROWID;
` + sqliteMigrateV3

// sqliteMigrateV2 turns a version 1 database into version 2.
const sqliteMigrateV2 = `
ALTER TABLE quota_log ADD COLUMN rid INTEGER NOT NULL DEFAULT 0;
PRAGMA user_version = 2;
`

// Statements, prepared once at open (the pool holds one connection).
const (
	// The newest entry of a bucket: its running totals and timestamp.
	sqlLast = `SELECT cum, seq, ts_us FROM quota_log
		WHERE credential = ? AND bucket = ? ORDER BY cum DESC LIMIT 1`
	// The oldest entry with ts_us > cutoff, i.e. the first one still counting.
	sqlFirstAfter = `SELECT cum, cost, seq, ts_us FROM quota_log
		WHERE credential = ? AND bucket = ? AND ts_us > ? ORDER BY ts_us, cum LIMIT 1`
	// The oldest entry whose expiry frees at least the units needed: the
	// first with cum >= base + need.
	sqlFreeing = `SELECT ts_us FROM quota_log
		WHERE credential = ? AND bucket = ? AND cum >= ? ORDER BY cum LIMIT 1`
	sqlInsert = `INSERT INTO quota_log (credential, bucket, cum, seq, ts_us, cost, rid)
		VALUES (?, ?, ?, ?, ?, ?, ?)`
	sqlEvict  = `DELETE FROM quota_log WHERE credential = ? AND bucket = ? AND ts_us <= ?`
	sqlMarker = `SELECT until_us FROM quota_exhausted WHERE credential = ?`
	// A marker only ever moves later; Reset removes it.
	sqlMark = `INSERT INTO quota_exhausted (credential, until_us) VALUES (?, ?)
		ON CONFLICT (credential) DO UPDATE SET until_us = max(until_us, excluded.until_us)`
	sqlDropMarker = `DELETE FROM quota_exhausted WHERE credential = ? AND until_us <= ?`

	// Refund: the entry a Reservation names (found through the window
	// index), its removal, and the shift of every later entry's running
	// totals. cum is the primary key, SQLite checks it row by row during
	// an UPDATE and promises no order (visited backwards, cum - cost would
	// collide with the next row), so the shift goes through negative values
	// (never stored otherwise). Today's SQLite visits the rows in ascending
	// order, where the plain shift works too: no test can tell them apart.
	sqlRefundFind = `SELECT cum FROM quota_log
		WHERE credential = ? AND bucket = ? AND ts_us = ? AND rid = ? AND cost = ?`
	sqlRefundDelete = `DELETE FROM quota_log WHERE credential = ? AND bucket = ? AND cum = ?`
	sqlRefundShift  = `UPDATE quota_log SET cum = -(cum - ?), seq = seq - 1
		WHERE credential = ? AND bucket = ? AND cum > ?`
	sqlRefundRestore = `UPDATE quota_log SET cum = -cum WHERE credential = ? AND bucket = ? AND cum < 0`
)

// sqliteReadableVersion is the oldest schema version read-only opens accept
// (their statements do not use rid).
const sqliteReadableVersion = 1

// NewSQLite opens (creating it and its parent directory, mode 0o700, if
// needed) the quota database at path and creates the schema if missing.
// path is a file path, not a URI; it must not contain '?'. Errors wrap
// ErrUnavailable.
func NewSQLite(path string, opts ...SQLiteOption) (*SQLiteBackend, error) {
	o := sqliteOptions{clock: time.Now, busyTimeout: DefaultSQLiteBusyTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	if path == "" || strings.ContainsRune(path, '?') || path == ":memory:" {
		return nil, fmt.Errorf("quota: sqlite path %q: must be a file path without '?': %w", path, ErrUnavailable)
	}
	if o.readOnly {
		return openSQLiteReadOnly(path, o)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("quota: cannot create directory of %s: %w: %w", path, ErrUnavailable, err)
	}
	// The pragmas are in the DSN so that every connection the pool opens gets them:
	//   - _txlock=immediate: BeginTx (not read-only) issues BEGIN IMMEDIATE, taking
	//     the write lock before reading, so two processes never both read the
	//     old log and both admit; a read-then-upgrade transaction could also fail
	//     with SQLITE_BUSY without waiting.
	//   - busy_timeout: wait (instead of failing with "database is locked") while
	//     another process holds the write lock; applied first by the driver.
	//   - journal_mode(WAL): readers (quota status) never block writers and vice versa.
	//   - synchronous(NORMAL): with WAL, a commit does not fsync; the database
	//     stays consistent, a power loss may forget the last admissions (the
	//     limiter then errs towards admitting a few calls Google also counts).
	dsn := path + "?_txlock=immediate" +
		fmt.Sprintf("&_pragma=busy_timeout(%d)", o.busyTimeout.Milliseconds()) +
		"&_pragma=journal_mode(WAL)" +
		"&_pragma=synchronous(NORMAL)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("quota: cannot open %s: %w: %w", path, ErrUnavailable, err)
	}
	// One connection: goroutines of this process queue in database/sql instead
	// of contending for the file lock; other processes wait in busy_timeout.
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	s := &SQLiteBackend{db: db, path: path, clock: o.clock, stmts: map[string]*sql.Stmt{}}
	if err := s.migrate(context.Background()); err != nil {
		db.Close()
		return nil, fmt.Errorf("quota: cannot create schema in %s: %w: %w", path, ErrUnavailable, err)
	}
	for _, q := range []string{sqlLast, sqlFirstAfter, sqlFreeing, sqlInsert, sqlEvict, sqlMarker, sqlMark, sqlDropMarker,
		sqlRefundFind, sqlRefundDelete, sqlRefundShift, sqlRefundRestore,
		sqlCounterRead, sqlCounterAdd, sqlCounterDrop, sqlCounterRefund, sqlLogByCounter, sqlLogDrop} {
		st, err := db.Prepare(q)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("quota: cannot prepare statements on %s: %w: %w", path, ErrUnavailable, err)
		}
		s.stmts[q] = st
	}
	return s, nil
}

// openSQLiteReadOnly is NewSQLite with WithSQLiteReadOnly.
func openSQLiteReadOnly(path string, o sqliteOptions) (*SQLiteBackend, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("quota: cannot open %s: %w: %w", path, ErrUnavailable, err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("quota: cannot open %s: %w: %w", path, ErrUnavailable, err)
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}
	base := u.String() + fmt.Sprintf("?mode=ro&_pragma=busy_timeout(%d)&_pragma=query_only(1)", o.busyTimeout.Milliseconds())
	var lastErr error
	for _, dsn := range []string{base, base + "&immutable=1"} {
		db, err := sql.Open("sqlite", dsn)
		if err != nil {
			return nil, fmt.Errorf("quota: cannot open %s: %w: %w", path, ErrUnavailable, err)
		}
		db.SetMaxOpenConns(1)
		var v int
		if lastErr = db.QueryRow("PRAGMA user_version").Scan(&v); lastErr != nil {
			db.Close()
			continue // read-only media: try immutable
		}
		if v < sqliteReadableVersion {
			db.Close()
			return nil, fmt.Errorf("quota: %s holds no quota schema: %w: %w", path, ErrUnavailable, fs.ErrNotExist)
		}
		s := &SQLiteBackend{db: db, path: path, clock: o.clock, stmts: map[string]*sql.Stmt{}}
		qs := []string{sqlLast, sqlFirstAfter, sqlFreeing, sqlMarker, sqlLogByCounter}
		if v >= 3 {
			qs = append(qs, sqlCounterRead)
		}
		for _, q := range qs {
			st, err := db.Prepare(q)
			if err != nil {
				s.Close()
				return nil, fmt.Errorf("quota: cannot prepare statements on %s: %w: %w", path, ErrUnavailable, err)
			}
			s.stmts[q] = st
		}
		return s, nil
	}
	return nil, fmt.Errorf("quota: cannot open %s: %w: %w", path, ErrUnavailable, lastErr)
}

// migrate creates the schema, or migrates an older one, unless user_version
// says it is current.
func (s *SQLiteBackend) migrate(ctx context.Context) error {
	var v int
	if err := s.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return err
	}
	if v >= sqliteSchemaVersion {
		return nil
	}
	tx, err := s.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE: one process migrates
	if err != nil {
		return err
	}
	defer tx.Rollback()
	// Read again under the write lock: another process may have migrated.
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return err
	}
	ddl := sqliteSchema
	switch {
	case v >= sqliteSchemaVersion:
		return nil
	case v == 1:
		ddl = sqliteMigrateV2 + sqliteMigrateV3
	case v == 2:
		ddl = sqliteMigrateV3
	}
	if _, err := tx.ExecContext(ctx, ddl); err != nil {
		return err
	}
	return tx.Commit()
}

// Path returns the database file path.
func (s *SQLiteBackend) Path() string { return s.path }

// Name returns "sqlite".
func (s *SQLiteBackend) Name() string { return "sqlite" }

// Close closes the database. The backend must not be used afterwards.
func (s *SQLiteBackend) Close() error {
	for _, st := range s.stmts {
		st.Close()
	}
	return s.db.Close()
}

// stmt returns the prepared statement query bound to tx. (The error result
// keeps call sites uniform; preparation itself happened at open.)
func (s *SQLiteBackend) stmt(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	st, ok := s.stmts[query]
	if !ok {
		return nil, fmt.Errorf("statement not prepared: %s", query)
	}
	return tx.StmtContext(ctx, st), nil
}

func sqliteUnavailable(op string, err error) error {
	return fmt.Errorf("quota: sqlite %s: %w: %w", op, ErrUnavailable, err)
}

// sqliteWindowUS is the window length in microseconds, rounded up (never early).
func sqliteWindowUS(d time.Duration) int64 {
	us := d / time.Microsecond
	if d%time.Microsecond != 0 {
		us++
	}
	return int64(us)
}

// sqliteCutoffUS returns c such that an entry counts in b's window at nowUS iff
// ts_us > c. Sliding: entries expire exactly window after their timestamp.
// Calendar: entries before the last Pacific midnight are out.
func sqliteCutoffUS(b Bucket, nowUS int64) int64 {
	if b.Calendar {
		return PacificMidnight(time.UnixMicro(nowUS)).UnixMicro() - 1
	}
	return nowUS - sqliteWindowUS(b.Window)
}

// sqliteLog is what one bucket's log looks like at a moment.
type sqliteLog struct {
	hasLast                  bool
	lastCum, lastSeq, lastTS int64
	// Window figures: the entries with ts_us > cutoff.
	used, entries int64
	oldestUS      int64 // 0 when the window is empty
	base          int64 // cum just before the first entry in the window
}

// readLog reads the newest entry and the window [cutoff, now] of one bucket.
func (s *SQLiteBackend) readLog(ctx context.Context, tx *sql.Tx, credential, bucket string, cutoff int64) (sqliteLog, error) {
	var st sqliteLog
	last, err := s.stmt(ctx, tx, sqlLast)
	if err != nil {
		return st, err
	}
	switch err := last.QueryRowContext(ctx, credential, bucket).Scan(&st.lastCum, &st.lastSeq, &st.lastTS); {
	case errors.Is(err, sql.ErrNoRows):
		return st, nil
	case err != nil:
		return st, err
	}
	st.hasLast = true
	used, entries, oldest, base, err := s.sumAfter(ctx, tx, credential, bucket, cutoff, st)
	if err != nil {
		return st, err
	}
	st.used, st.entries, st.oldestUS, st.base = used, entries, oldest, base
	return st, nil
}

// sumAfter returns the units and entries with ts_us > cutoff, the oldest
// such timestamp and the cum just before it, given the newest entry in st.
func (s *SQLiteBackend) sumAfter(ctx context.Context, tx *sql.Tx, credential, bucket string, cutoff int64, st sqliteLog) (used, entries, oldest, base int64, err error) {
	if !st.hasLast || st.lastTS <= cutoff {
		return 0, 0, 0, st.lastCum, nil
	}
	first, err := s.stmt(ctx, tx, sqlFirstAfter)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	var cum, cost, seq, ts int64
	if err := first.QueryRowContext(ctx, credential, bucket, cutoff).Scan(&cum, &cost, &seq, &ts); err != nil {
		return 0, 0, 0, 0, err
	}
	base = cum - cost
	return st.lastCum - base, st.lastSeq - seq + 1, ts, base, nil
}

// retryAfter returns how long after nowUS a call of units fits in b, given
// the window state st (0 when it fits now). Sliding: walk the oldest entries
// until enough units are freed; the entry that frees the last needed unit
// stops counting at exactly ts + window (the same boundary admission uses).
// Calendar: everything of the day expires at the next Pacific midnight.
func (s *SQLiteBackend) retryAfter(ctx context.Context, tx *sql.Tx, credential string, b Bucket, st sqliteLog, units, nowUS int64) (time.Duration, error) {
	return s.retryAfterPlus(ctx, tx, credential, b, st, 0, units, nowUS)
}

// retryAfterPlus is retryAfter when extra units count in the window after
// the log's newest entry (chunks not yet written, Status: appendedLog) and
// leaving log entries alone can free what the call needs.
func (s *SQLiteBackend) retryAfterPlus(ctx context.Context, tx *sql.Tx, credential string, b Bucket, st sqliteLog, extra, units, nowUS int64) (time.Duration, error) {
	need := st.used + extra + units - b.Limit
	if need <= 0 || units > b.Limit {
		return 0, nil
	}
	if b.Calendar {
		now := time.UnixMicro(nowUS)
		return time.Duration(NextPacificMidnight(now).UnixMicro()-nowUS) * time.Microsecond, nil
	}
	freeing, err := s.stmt(ctx, tx, sqlFreeing)
	if err != nil {
		return 0, err
	}
	var ts int64
	if err := freeing.QueryRowContext(ctx, credential, b.Name, st.base+need).Scan(&ts); err != nil {
		return 0, err
	}
	return time.Duration(ts+sqliteWindowUS(b.Window)-nowUS) * time.Microsecond, nil
}

// Reserve implements Backend in one BEGIN IMMEDIATE transaction: it reads
// each charged bucket's window, admits only if every charge fits
// (used + units <= limit) and the credential is not marked exhausted, and then
// records one entry per bucket and evicts expired entries. A denial rolls
// back and writes nothing. On denial RetryAfter is the largest wait among the
// denying buckets and the exhaustion marker, and DeniedBucket names the bucket
// with the largest wait (the first in charge order on ties; "" when the
// exhaustion marker alone decides). A bucket whose newest entry is more than
// ClockStepTolerance after the clock denies until the clock catches up
// (Decision.ClockBehind). A charge above its bucket's limit returns a
// *CostError. Database failures wrap ErrUnavailable.
func (s *SQLiteBackend) Reserve(ctx context.Context, credential string, charges []BucketCharge) (Decision, error) {
	for _, c := range charges {
		if c.Units <= 0 {
			return Decision{}, fmt.Errorf("quota: charge of %d units in bucket %q: must be > 0", c.Units, c.Name)
		}
		if c.Units > c.Limit {
			return Decision{}, &CostError{Bucket: c.Name, Units: c.Units, Limit: c.Limit}
		}
	}
	tx, err := s.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE (see the DSN)
	if err != nil {
		return Decision{}, sqliteUnavailable("reserve", err)
	}
	defer tx.Rollback()
	// Read the clock only once the write lock is held, so timestamps follow
	// commit order across processes.
	nowUS := s.clock().UnixMicro()
	d := Decision{Now: time.UnixMicro(nowUS), Remaining: make(map[string]int64, len(charges))}

	marker, err := s.stmt(ctx, tx, sqlMarker)
	if err != nil {
		return Decision{}, sqliteUnavailable("reserve", err)
	}
	var untilUS int64
	switch err := marker.QueryRowContext(ctx, credential).Scan(&untilUS); {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return Decision{}, sqliteUnavailable("reserve", err)
	}
	if untilUS > nowUS {
		d.Exhausted = true
		d.ExhaustedUntil = time.UnixMicro(untilUS)
		d.RetryAfter = time.Duration(untilUS-nowUS) * time.Microsecond
	}

	states := make([]sqliteLog, len(charges))
	counters := make([]sqliteCounters, len(charges))
	denied, deniedRA := "", time.Duration(0)
	for i, c := range charges {
		if c.IsCounter() {
			cr, err := s.counterRead(ctx, tx, credential, c.Bucket, nowUS)
			if err != nil {
				return Decision{}, sqliteUnavailable("reserve", err)
			}
			counters[i] = cr
			w := cr.w
			ra, behind := clockStepWait(cr.newest, nowUS)
			fits := false
			if behind > 0 {
				d.ClockBehind = max(d.ClockBehind, behind)
			} else {
				d.Remaining[c.Name] = max(c.Limit-w.used(), 0)
				fits, ra = counterDecide(w, c.Bucket, c.Units, nowUS)
			}
			if !fits && (denied == "" || ra > deniedRA) {
				denied, deniedRA = c.Name, ra
			}
			continue
		}
		if err := s.convertCounters(ctx, tx, credential, c.Bucket, nowUS); err != nil {
			return Decision{}, sqliteUnavailable("reserve", err)
		}
		st, err := s.readLog(ctx, tx, credential, c.Name, sqliteCutoffUS(c.Bucket, nowUS))
		if err != nil {
			return Decision{}, sqliteUnavailable("reserve", err)
		}
		states[i] = st
		d.Remaining[c.Name] = max(c.Limit-st.used, 0)
		if st.hasLast {
			if ra, behind := clockStepWait(st.lastTS, nowUS); behind > 0 {
				d.ClockBehind = max(d.ClockBehind, behind)
				if denied == "" || ra > deniedRA {
					denied, deniedRA = c.Name, ra
				}
				continue
			}
		}
		if st.used+c.Units <= c.Limit {
			continue
		}
		ra, err := s.retryAfter(ctx, tx, credential, c.Bucket, st, c.Units, nowUS)
		if err != nil {
			return Decision{}, sqliteUnavailable("reserve", err)
		}
		if denied == "" || ra > deniedRA {
			denied, deniedRA = c.Name, ra
		}
	}
	if denied != "" {
		d.RetryAfter = max(d.RetryAfter, deniedRA)
		if !d.Exhausted {
			d.DeniedBucket = denied
		}
	}
	if d.Exhausted || denied != "" {
		return d, nil // the deferred rollback: a denial writes nothing
	}

	insert, err := s.stmt(ctx, tx, sqlInsert)
	if err != nil {
		return Decision{}, sqliteUnavailable("reserve", err)
	}
	evict, err := s.stmt(ctx, tx, sqlEvict)
	if err != nil {
		return Decision{}, sqliteUnavailable("reserve", err)
	}
	midnightUS := PacificMidnight(d.Now).UnixMicro()
	d.Reservation.refunded = newCounterMark(charges)
	for i, c := range charges {
		if c.IsCounter() {
			// at is max(clock, latest stamp): see counterRead.
			cr := counters[i]
			if err := s.counterAdd(ctx, tx, credential, c.Bucket, cr, cr.w.now, c.Units); err != nil {
				return Decision{}, sqliteUnavailable("reserve", err)
			}
			d.Reservation.entries = append(d.Reservation.entries, reservedEntry{bucket: c.Bucket, units: c.Units, at: cr.w.now})
			d.Remaining[c.Name] = max(d.Remaining[c.Name]-c.Units, 0)
			continue
		}
		st := states[i]
		// Never stamp an entry before the newest one (clock stepped back):
		// keeps the window a contiguous range of cum; at worst stricter.
		ts := max(nowUS, st.lastTS)
		rid := sqliteNewRID()
		if _, err := insert.ExecContext(ctx, credential, c.Name, st.lastCum+c.Units, st.lastSeq+1, ts, c.Units, rid); err != nil {
			return Decision{}, sqliteUnavailable("reserve", err)
		}
		d.Reservation.entries = append(d.Reservation.entries, reservedEntry{bucket: c.Bucket, units: c.Units, at: ts, id: rid})
		d.Remaining[c.Name] = max(c.Limit-st.used-c.Units, 0)
		// Evict what is out of the window and not from today (UsedToday):
		// an index range, empty most of the time.
		if _, err := evict.ExecContext(ctx, credential, c.Name, min(sqliteCutoffUS(c.Bucket, nowUS), midnightUS-1)); err != nil {
			return Decision{}, sqliteUnavailable("reserve", err)
		}
	}
	if untilUS != 0 {
		drop, err := s.stmt(ctx, tx, sqlDropMarker)
		if err != nil {
			return Decision{}, sqliteUnavailable("reserve", err)
		}
		if _, err := drop.ExecContext(ctx, credential, nowUS); err != nil {
			return Decision{}, sqliteUnavailable("reserve", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return Decision{}, sqliteUnavailable("reserve", err)
	}
	d.Allowed = true
	return d, nil
}

// sqliteNewRID returns a random non-zero rid: unique across the processes
// sharing the file without coordination (a collision also needs the same
// credential, bucket, timestamp and cost to matter).
func sqliteNewRID() int64 {
	for {
		if id := rand.Int64(); id != 0 {
			return id
		}
	}
}

// Refund implements Backend in one BEGIN IMMEDIATE transaction: each entry
// of r still stored (matched by bucket, timestamp, cost and rid) and still
// in its bucket's window at the local clock is deleted, and every later
// entry of the bucket has its running totals (cum, seq) lowered to match;
// other entries of r are skipped. Cost: O(log n) plus one row rewrite per
// entry recorded after the refunded one (a refund follows its reservation
// within one request's dial time, so few). Database failures wrap
// ErrUnavailable.
func (s *SQLiteBackend) Refund(ctx context.Context, credential string, r Reservation) (err error) {
	tx, err := s.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE (see the DSN)
	if err != nil {
		return sqliteUnavailable("refund", err)
	}
	defer tx.Rollback()
	nowUS := s.clock().UnixMicro()
	var find, del, shift, restore *sql.Stmt
	for _, p := range []struct {
		st **sql.Stmt
		q  string
	}{{&find, sqlRefundFind}, {&del, sqlRefundDelete}, {&shift, sqlRefundShift}, {&restore, sqlRefundRestore}} {
		if *p.st, err = s.stmt(ctx, tx, p.q); err != nil {
			return sqliteUnavailable("refund", err)
		}
	}
	claimed, release := r.claimRefund()
	defer func() {
		if err != nil {
			release()
		}
	}()
	for _, e := range r.entries {
		if e.bucket.IsCounter() {
			if !claimed {
				continue
			}
			if err = s.counterRefund(ctx, tx, credential, e.bucket, e.at, e.units, nowUS); err != nil {
				return sqliteUnavailable("refund", err)
			}
			continue
		}
		if e.id == 0 || e.at <= sqliteCutoffUS(e.bucket, nowUS) {
			continue // not ours, or out of its window: nothing to give back
		}
		var cum int64
		switch err := find.QueryRowContext(ctx, credential, e.bucket.Name, e.at, e.id, e.units).Scan(&cum); {
		case errors.Is(err, sql.ErrNoRows):
			continue // already refunded, evicted or reset
		case err != nil:
			return sqliteUnavailable("refund", err)
		}
		if _, err := del.ExecContext(ctx, credential, e.bucket.Name, cum); err != nil {
			return sqliteUnavailable("refund", err)
		}
		if _, err := shift.ExecContext(ctx, e.units, credential, e.bucket.Name, cum); err != nil {
			return sqliteUnavailable("refund", err)
		}
		if _, err := restore.ExecContext(ctx, credential, e.bucket.Name); err != nil {
			return sqliteUnavailable("refund", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return sqliteUnavailable("refund", err)
	}
	return nil
}

// Status implements Backend with a read-only (deferred) transaction: a
// consistent snapshot that neither admits nor evicts. RetryAfterOne and
// RetryAfterMax are computed exactly like Reserve's RetryAfter; UsedToday
// sums the stored entries since PacificMidnight(Now). maxCost missing or <= 0
// for a bucket counts as 1. Database failures wrap ErrUnavailable.
func (s *SQLiteBackend) Status(ctx context.Context, credential string, buckets []Bucket, maxCost map[string]int64) (Status, error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true}) // plain BEGIN
	if err != nil {
		return Status{}, sqliteUnavailable("status", err)
	}
	defer tx.Rollback()
	nowUS := s.clock().UnixMicro()
	st := Status{Credential: credential, Backend: s.Name(), Now: time.UnixMicro(nowUS)}

	marker, err := s.stmt(ctx, tx, sqlMarker)
	if err != nil {
		return Status{}, sqliteUnavailable("status", err)
	}
	var untilUS int64
	switch err := marker.QueryRowContext(ctx, credential).Scan(&untilUS); {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return Status{}, sqliteUnavailable("status", err)
	}
	if untilUS > nowUS {
		st.ExhaustedUntil = time.UnixMicro(untilUS)
	}

	midnightUS := PacificMidnight(st.Now).UnixMicro()
	for _, b := range buckets {
		if b.IsCounter() {
			cr, err := s.counterRead(ctx, tx, credential, b, nowUS)
			if err != nil {
				return Status{}, sqliteUnavailable("status", err)
			}
			st.Buckets = append(st.Buckets, counterStatus(b, cr.w, maxCost[b.Name], midnightUS))
			continue
		}
		cutoff := sqliteCutoffUS(b, nowUS)
		ls, err := s.readLog(ctx, tx, credential, b.Name, cutoff)
		if err != nil {
			return Status{}, sqliteUnavailable("status", err)
		}
		// The bucket's counters, if it had that form, as Reserve would
		// append them to the log (switch.go).
		old, err := s.oldCounters(ctx, tx, credential, b.Name)
		if err != nil {
			return Status{}, sqliteUnavailable("status", err)
		}
		a := appendedLog{b: b, nowUS: nowUS, cutoff: cutoff, logUsed: ls.used, logEntries: ls.entries, logOldest: ls.oldestUS,
			chunks: restamp(counterChunks(old, nowUS), ls.lastTS)}
		used, entries, oldest := a.figures()
		bs := BucketStatus{Bucket: b, Used: used, Remaining: max(b.Limit-used, 0), Entries: entries, MaxCost: max(maxCost[b.Name], 1)}
		if oldest != 0 {
			bs.Oldest = time.UnixMicro(oldest)
		}
		retry := func(units int64) (time.Duration, error) {
			if d, ok := a.chunkRetry(units); ok {
				return d, nil
			}
			return s.retryAfterPlus(ctx, tx, credential, b, ls, used-ls.used, units, nowUS)
		}
		if bs.RetryAfterOne, err = retry(1); err != nil {
			return Status{}, sqliteUnavailable("status", err)
		}
		if bs.RetryAfterMax, err = retry(bs.MaxCost); err != nil {
			return Status{}, sqliteUnavailable("status", err)
		}
		if bs.UsedToday, _, _, _, err = s.sumAfter(ctx, tx, credential, b.Name, midnightUS-1, ls); err != nil {
			return Status{}, sqliteUnavailable("status", err)
		}
		bs.UsedToday += a.since(midnightUS)
		st.Buckets = append(st.Buckets, bs)
	}
	if err := tx.Commit(); err != nil {
		return Status{}, sqliteUnavailable("status", err)
	}
	return st, nil
}

// MarkExhausted implements Backend: every reservation of credential is
// denied (Decision.Exhausted) until until, at microsecond precision. A marker
// only moves later: marking an earlier time than the current marker keeps the
// current one (Reset clears it). Database failures wrap ErrUnavailable.
func (s *SQLiteBackend) MarkExhausted(ctx context.Context, credential string, until time.Time) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return sqliteUnavailable("mark exhausted", err)
	}
	defer tx.Rollback()
	// Round up to the microsecond: never release early.
	untilUS := until.UnixMicro()
	if until.Sub(time.UnixMicro(untilUS)) > 0 {
		untilUS++
	}
	mark, err := s.stmt(ctx, tx, sqlMark)
	if err != nil {
		return sqliteUnavailable("mark exhausted", err)
	}
	if _, err := mark.ExecContext(ctx, credential, untilUS); err != nil {
		return sqliteUnavailable("mark exhausted", err)
	}
	if err := tx.Commit(); err != nil {
		return sqliteUnavailable("mark exhausted", err)
	}
	return nil
}

// Reset implements Backend: it deletes every log entry and the exhaustion
// marker of credential. Database failures wrap ErrUnavailable.
func (s *SQLiteBackend) Reset(ctx context.Context, credential string) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return sqliteUnavailable("reset", err)
	}
	defer tx.Rollback()
	for _, q := range []string{
		`DELETE FROM quota_log WHERE credential = ?`,
		`DELETE FROM quota_exhausted WHERE credential = ?`,
		`DELETE FROM quota_counter WHERE credential = ?`,
	} {
		if _, err := tx.ExecContext(ctx, q, credential); err != nil {
			return sqliteUnavailable("reset", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return sqliteUnavailable("reset", err)
	}
	return nil
}

var _ Backend = (*SQLiteBackend)(nil)
