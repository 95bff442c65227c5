package quota

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/trendfetch/trendfetch/internal/sqlitedb"
)

// sqliteBackend is the embedded Backend: one SQLite file of this host, one
// BEGIN IMMEDIATE transaction per decision (docs/quota.md, "Data layout").
type sqliteBackend struct {
	db       *sql.DB
	clock    func() time.Time
	readOnly bool
	stmts    map[string]*sql.Stmt // the statements below, prepared at open
}

// sqliteMigrations holds quota.db's numbered migrations, applied by sqlitedb.Open.
//
//go:embed migrations/*.sql
var sqliteMigrations embed.FS

const (
	// The newest entry of a bucket: its running totals and timestamp.
	sqlLast = `SELECT cum, seq, ts_us FROM quota_log WHERE credential = ? AND bucket = ? ORDER BY cum DESC LIMIT 1`
	// The oldest entry with ts_us > cutoff, i.e. the first one still counting.
	sqlFirstAfter = `SELECT cum, cost, seq, ts_us FROM quota_log
		WHERE credential = ? AND bucket = ? AND ts_us > ? ORDER BY ts_us, cum LIMIT 1`
	// The first entry with cum >= base + need: its expiry frees need units.
	sqlFreeing = `SELECT ts_us FROM quota_log WHERE credential = ? AND bucket = ? AND cum >= ? ORDER BY cum LIMIT 1`
	sqlInsert  = `INSERT INTO quota_log (credential, bucket, cum, seq, ts_us, cost, rid) VALUES (?, ?, ?, ?, ?, ?, ?)`
	sqlEvict   = `DELETE FROM quota_log WHERE credential = ? AND bucket = ? AND ts_us <= ?`
	// The marks of a credential, its own (site '') first.
	sqlMarks = `SELECT site, until_us, why FROM quota_exhausted WHERE credential = ? AND until_us > ? ORDER BY site`
	// sqlMarks before migration 0002: the credential's mark only.
	sqlMarksBefore0002 = `SELECT '', until_us, '' FROM quota_exhausted WHERE credential = ? AND until_us > ?`
	// A mark only moves later.
	sqlMark = `INSERT INTO quota_exhausted (credential, site, until_us, why) VALUES (?, ?, ?, ?)
		ON CONFLICT (credential, site) DO UPDATE SET until_us = excluded.until_us, why = excluded.why
		WHERE excluded.until_us > until_us`
	sqlDropMarker = `DELETE FROM quota_exhausted WHERE credential = ? AND until_us <= ?`
	// A would-be denial of a shadow bucket, counted per Pacific day (day_us).
	sqlShadowAdd = `INSERT INTO quota_shadow (credential, bucket, site, day_us, denials) VALUES (?, ?, ?, ?, 1)
		ON CONFLICT (credential, bucket, site) DO UPDATE
		SET denials = CASE WHEN day_us = excluded.day_us THEN denials + 1 ELSE 1 END, day_us = excluded.day_us`
	sqlShadow = `SELECT bucket, site, denials FROM quota_shadow WHERE credential = ? AND day_us = ?`
	// The outage reserves' holds in force, rewritten whole by Hold.
	sqlHolds    = `SELECT bucket, id, units, until_us FROM quota_hold WHERE credential = ? AND until_us > ?`
	sqlHoldDrop = `DELETE FROM quota_hold WHERE credential = ?`
	sqlHoldAdd  = `INSERT INTO quota_hold (credential, bucket, id, units, until_us) VALUES (?, ?, ?, ?, ?)`
	// Refund: the entry a Reservation names, only while it is the newest of its bucket.
	sqlRefund = `DELETE FROM quota_log WHERE credential = ?1 AND bucket = ?2 AND ts_us = ?3 AND rid = ?4 AND cost = ?5
		AND cum = (SELECT max(cum) FROM quota_log WHERE credential = ?1 AND bucket = ?2)`
)

// NewSQLite opens the quota database at path, creating it (and its parent directory, mode 0o700) if
// needed, and applies its pending migrations. readOnly opens an existing one for reading only:
// nothing is created, a missing file or schema wraps fs.ErrNotExist, writes fail with
// ErrUnavailable. Errors wrap ErrUnavailable and the *sqlitedb error, if any.
func NewSQLite(path string, readOnly bool) (Backend, error) {
	fail := func(what string, err error) (*sqliteBackend, error) {
		return nil, fmt.Errorf("quota: %s %s: %w: %w", what, path, ErrUnavailable, err)
	}
	// One connection: goroutines queue in database/sql, other processes in
	// busy_timeout under BEGIN IMMEDIATE.
	dbOpts := sqlitedb.Options{ReadOnly: readOnly, MaxConns: 1}
	queries := []string{sqlLast, sqlFirstAfter, sqlFreeing, sqlMarks, sqlShadow, sqlHolds}
	if !readOnly {
		dbOpts.Migrations, _ = fs.Sub(sqliteMigrations, "migrations") // embedded: cannot fail
		queries = append(queries, sqlInsert, sqlEvict, sqlMark, sqlDropMarker, sqlRefund, sqlShadowAdd, sqlHoldDrop, sqlHoldAdd)
	}
	db, err := sqlitedb.Open(context.Background(), path, dbOpts)
	if err != nil {
		return fail("cannot open", err)
	}
	s := &sqliteBackend{db: db, clock: time.Now, readOnly: readOnly, stmts: map[string]*sql.Stmt{}}
	for _, q := range queries {
		st, err := s.db.Prepare(q)
		if err != nil && q == sqlMarks && s.readOnly && strings.Contains(err.Error(), "no such column") {
			st, err = s.db.Prepare(sqlMarksBefore0002) // a quota.db no writer has migrated yet
		}
		if err != nil && (q == sqlShadow || q == sqlHolds) && s.readOnly && strings.Contains(err.Error(), "no such table: quota_") {
			continue // before migration 0003 or 0004: no counts (shadowRows), no holds (holds)
		}
		if err != nil {
			s.Close()
			if strings.Contains(err.Error(), "no such table") {
				return fail("no quota schema in", fs.ErrNotExist)
			}
			return fail("cannot prepare statements on", err)
		}
		s.stmts[q] = st
	}
	return s, nil
}

// Name returns "sqlite".
func (s *sqliteBackend) Name() string { return "sqlite" }

// Close closes the database. The backend must not be used afterwards.
func (s *sqliteBackend) Close() error {
	for _, st := range s.stmts {
		st.Close()
	}
	return s.db.Close()
}

// stmt returns the prepared statement query bound to tx.
func (s *sqliteBackend) stmt(ctx context.Context, tx *sql.Tx, query string) *sql.Stmt {
	return tx.StmtContext(ctx, s.stmts[query])
}

// errSQLiteReadOnly is why writes fail on a backend opened readOnly.
var errSQLiteReadOnly = errors.New("the quota database is open read-only")

// errRollback, returned by a transaction's function, rolls it back without an error.
var errRollback = errors.New("roll back")

func sqliteUnavailable(op string, err error) error {
	return fmt.Errorf("quota: sqlite %s: %w: %w", op, ErrUnavailable, err)
}

// inTx runs fn in one transaction, BEGIN IMMEDIATE when write else a read-only BEGIN, with the
// local clock read once the lock is held (stamps follow commit order), and commits unless fn fails.
// errRollback rolls back quietly; any other failure wraps ErrUnavailable.
func (s *sqliteBackend) inTx(ctx context.Context, op string, write bool, fn func(tx *sql.Tx, nowUS int64) error) error {
	if write && s.readOnly {
		return sqliteUnavailable(op, errSQLiteReadOnly)
	}
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: !write}) // write: BEGIN IMMEDIATE (sqlitedb's DSN)
	if err != nil {
		return sqliteUnavailable(op, err)
	}
	defer tx.Rollback()
	switch err := fn(tx, s.clock().UnixMicro()); {
	case err == errRollback:
		return nil
	case err != nil:
		return sqliteUnavailable(op, err)
	}
	if err := tx.Commit(); err != nil {
		return sqliteUnavailable(op, err)
	}
	return nil
}

// sqliteLog is one bucket's log at a moment.
type sqliteLog struct {
	lastCum, lastSeq int64 // the newest entry's running totals (0: empty)
	base             int64 // cum just before the first entry in the window
	logWindow
}

// readLog reads the newest entry and the window (stamps > cutoff) of one bucket.
func (s *sqliteBackend) readLog(ctx context.Context, tx *sql.Tx, credential string, b Bucket, cutoff int64) (sqliteLog, error) {
	var st sqliteLog
	st.freeing = func(need int64) (ts int64, err error) {
		err = s.stmt(ctx, tx, sqlFreeing).QueryRowContext(ctx, credential, b.Name, st.base+need).Scan(&ts)
		return ts, err
	}
	switch err := s.stmt(ctx, tx, sqlLast).QueryRowContext(ctx, credential, b.Name).Scan(&st.lastCum, &st.lastSeq, &st.newest); {
	case errors.Is(err, sql.ErrNoRows):
		return st, nil
	case err != nil:
		return st, err
	}
	st.base = st.lastCum
	if st.newest <= cutoff {
		return st, nil
	}
	var cum, cost, seq int64
	if err := s.stmt(ctx, tx, sqlFirstAfter).QueryRowContext(ctx, credential, b.Name, cutoff).Scan(&cum, &cost, &seq, &st.oldest); err != nil {
		return st, err
	}
	st.base = cum - cost
	st.used, st.entries = st.lastCum-st.base, st.lastSeq-seq+1
	return st, nil
}

// marks reads the credential's marks in force at nowUS, in Status.Marks order.
func (s *sqliteBackend) marks(ctx context.Context, tx *sql.Tx, credential string, nowUS int64) ([]Mark, error) {
	rows, err := s.stmt(ctx, tx, sqlMarks).QueryContext(ctx, credential, nowUS)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Mark
	for rows.Next() {
		var m Mark
		var untilUS int64
		if err := rows.Scan(&m.Site, &untilUS, &m.Why); err != nil {
			return nil, err
		}
		m.Until = time.UnixMicro(untilUS)
		out = append(out, m)
	}
	return out, rows.Err()
}

// Reserve implements Backend in one write transaction: decide, then record and evict.
func (s *sqliteBackend) Reserve(ctx context.Context, credential, site string, charges []bucketCharge) (d Decision, err error) {
	err = s.inTx(ctx, "reserve", true, func(tx *sql.Tx, nowUS int64) error {
		marks, err := s.marks(ctx, tx, credential, nowUS)
		if err != nil {
			return err
		}
		until := map[string]int64{} // by site
		for _, m := range marks {
			until[m.Site] = m.Until.UnixMicro()
		}
		holds, err := s.holds(ctx, tx, credential, nowUS)
		if err != nil {
			return err
		}
		logs := make([]sqliteLog, len(charges))
		windows := make([]logWindow, len(charges))
		for i, c := range charges {
			if logs[i], err = s.readLog(ctx, tx, credential, c.Bucket, windowCutoffUS(c.Bucket, nowUS)); err != nil {
				return err
			}
			windows[i] = logs[i].logWindow
			windows[i].held = heldIn(holds, c.Name, nowUS)
		}
		if d, err = decide(charges, windows, nowUS, until[""], until[site]); err != nil || !d.Allowed {
			return err
		}
		if d.Reservation.entries, err = s.record(ctx, tx, credential, charges, logs, nowUS); err != nil {
			return err
		}
		return s.countShadow(ctx, tx, credential, site, d)
	})
	if err != nil {
		return Decision{}, err
	}
	return d, nil
}

// record appends an admitted call's charges to their buckets' logs (logs[i] is charges[i]'s,
// as read in tx) and evicts what left their windows; it returns the entries reserved.
func (s *sqliteBackend) record(ctx context.Context, tx *sql.Tx, credential string, charges []bucketCharge, logs []sqliteLog, nowUS int64) ([]reservedEntry, error) {
	var out []reservedEntry
	for i, c := range charges {
		st, ts, rid := logs[i], max(nowUS, logs[i].newest), rand.Int64N(math.MaxInt64)+1 // non-zero
		if _, err := s.stmt(ctx, tx, sqlInsert).ExecContext(ctx, credential, c.Name, st.lastCum+c.Units, st.lastSeq+1, ts, c.Units, rid); err != nil {
			return nil, err
		}
		out = append(out, reservedEntry{bucket: c.Bucket, units: c.Units, at: ts, id: rid})
		if _, err := s.stmt(ctx, tx, sqlEvict).ExecContext(ctx, credential, c.Name, evictCutoffUS(c.Bucket, nowUS)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Refund implements Backend in one write transaction: all of r's entries or none.
func (s *sqliteBackend) Refund(ctx context.Context, credential string, r Reservation) (refunded bool, err error) {
	err = s.inTx(ctx, "refund", true, func(tx *sql.Tx, _ int64) error {
		for _, e := range r.entries {
			res, err := s.stmt(ctx, tx, sqlRefund).ExecContext(ctx, credential, e.bucket.Name, e.at, e.id, e.units)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n != 1 {
				return errRollback // not the newest: every entry stays
			}
		}
		refunded = !r.IsZero()
		return nil
	})
	return refunded && err == nil, err
}

// Status implements Backend with a read-only transaction.
func (s *sqliteBackend) Status(ctx context.Context, credential string, buckets []Bucket, maxCost map[string]int64) (st Status, err error) {
	err = s.inTx(ctx, "status", false, func(tx *sql.Tx, nowUS int64) error {
		marks, err := s.marks(ctx, tx, credential, nowUS)
		if err != nil {
			return err
		}
		st, err = embeddedStatus(nowUS, marks, buckets, maxCost, func(b Bucket, cutoffUS int64) (logWindow, error) {
			l, err := s.readLog(ctx, tx, credential, b, cutoffUS)
			return l.logWindow, err
		})
		if err != nil {
			return err
		}
		rows, err := s.shadowRows(ctx, tx, credential, DayStart(st.Now).UnixMicro())
		addShadowDenials(&st, rows)
		if err != nil {
			return err
		}
		holds, err := s.holds(ctx, tx, credential, nowUS)
		addHolds(&st, holds)
		return err
	})
	if err != nil {
		return Status{}, err // no partial answer: Now stays unknown
	}
	return st, nil
}

// countShadow adds d's would-be denials of site to today's counts.
func (s *sqliteBackend) countShadow(ctx context.Context, tx *sql.Tx, credential, site string, d Decision) error {
	for _, b := range d.ShadowDenied {
		if _, err := s.stmt(ctx, tx, sqlShadowAdd).ExecContext(ctx, credential, b, site, DayStart(d.Now).UnixMicro()); err != nil {
			return err
		}
	}
	return nil
}

// shadowRows reads the would-be denials of the Pacific day starting at dayUS
// (none from a quota.db before migration 0003).
func (s *sqliteBackend) shadowRows(ctx context.Context, tx *sql.Tx, credential string, dayUS int64) ([]shadowRow, error) {
	if s.stmts[sqlShadow] == nil {
		return nil, nil
	}
	rows, err := s.stmt(ctx, tx, sqlShadow).QueryContext(ctx, credential, dayUS)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []shadowRow
	for rows.Next() {
		var r shadowRow
		if err := rows.Scan(&r.bucket, &r.site, &r.n); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// holds reads the credential's holds in force at nowUS (none from a quota.db before migration 0004).
func (s *sqliteBackend) holds(ctx context.Context, tx *sql.Tx, credential string, nowUS int64) ([]holdRecord, error) {
	if s.stmts[sqlHolds] == nil {
		return nil, nil
	}
	rows, err := s.stmt(ctx, tx, sqlHolds).QueryContext(ctx, credential, nowUS)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []holdRecord
	for rows.Next() {
		var r holdRecord
		if err := rows.Scan(&r.bucket, &r.id, &r.units, &r.untilUS); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Hold implements Backend in one write transaction: the spent units as entries, then the holds.
func (s *sqliteBackend) Hold(ctx context.Context, credential, id string, hs []holdCharge, spendFor time.Duration) (held []int64, err error) {
	err = s.inTx(ctx, "hold", true, func(tx *sql.Tx, nowUS int64) error {
		if err := s.recordSpent(ctx, tx, credential, hs, nowUS); err != nil {
			return err
		}
		recs, err := s.holds(ctx, tx, credential, nowUS)
		if err != nil {
			return err
		}
		recs, held, err = embeddedHold(recs, id, hs, nowUS, spendFor, func(b Bucket) (logWindow, error) {
			l, err := s.readLog(ctx, tx, credential, b, windowCutoffUS(b, nowUS))
			return l.logWindow, err
		})
		if err != nil {
			return err
		}
		if _, err := s.stmt(ctx, tx, sqlHoldDrop).ExecContext(ctx, credential); err != nil {
			return err
		}
		for _, r := range recs {
			if _, err := s.stmt(ctx, tx, sqlHoldAdd).ExecContext(ctx, credential, r.bucket, r.id, r.units, r.untilUS); err != nil {
				return err
			}
		}
		return nil
	})
	return held, err
}

// recordSpent records the units hs spent from an outage reserve, one entry per bucket, at nowUS.
func (s *sqliteBackend) recordSpent(ctx context.Context, tx *sql.Tx, credential string, hs []holdCharge, nowUS int64) error {
	for _, h := range hs {
		if h.Spent <= 0 {
			continue
		}
		l, err := s.readLog(ctx, tx, credential, h.Bucket, nowUS)
		if err != nil {
			return err
		}
		if _, err := s.record(ctx, tx, credential, []bucketCharge{{Bucket: h.Bucket, Units: h.Spent}}, []sqliteLog{l}, nowUS); err != nil {
			return err
		}
	}
	return nil
}

// MarkExhausted implements Backend, dropping the credential's marks already over.
func (s *sqliteBackend) MarkExhausted(ctx context.Context, credential string, m Mark) error {
	return s.inTx(ctx, "mark exhausted", true, func(tx *sql.Tx, nowUS int64) error {
		if _, err := s.stmt(ctx, tx, sqlDropMarker).ExecContext(ctx, credential, nowUS); err != nil {
			return err
		}
		_, err := s.stmt(ctx, tx, sqlMark).ExecContext(ctx, credential, m.Site, markEnd(m.Until, nowUS), m.Why)
		return err
	})
}

// Reset implements Backend.
func (s *sqliteBackend) Reset(ctx context.Context, credential string) error {
	return s.inTx(ctx, "reset", true, func(tx *sql.Tx, _ int64) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM quota_log WHERE credential = ?`, credential); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM quota_exhausted WHERE credential = ?`, credential); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM quota_shadow WHERE credential = ?`, credential); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM quota_hold WHERE credential = ?`, credential)
		return err
	})
}

// TryLock implements leaseLocker: one row of table leases per lease; each lease
// operation is one transaction on the backend's clock.
func (s *sqliteBackend) TryLock(ctx context.Context, id leaseID, token string, ttl time.Duration) (ok bool, holder string, remaining time.Duration, err error) {
	err = s.inTx(ctx, "lease lock", true, func(tx *sql.Tx, nowUS int64) error {
		var curToken string
		var expUS int64
		err := tx.QueryRowContext(ctx, `SELECT token, holder, expires_us FROM leases WHERE name = ?`, id.name()).Scan(&curToken, &holder, &expUS)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		case expUS > nowUS && curToken != token:
			remaining = time.Duration(expUS-nowUS) * time.Microsecond
			return nil
		}
		ok, holder, remaining = true, leaseHolderOf(token), time.Duration(ceilTo(ttl, time.Millisecond))*time.Millisecond
		_, err = tx.ExecContext(ctx, `INSERT INTO leases (name, token, holder, expires_us) VALUES (?, ?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET token = excluded.token, holder = excluded.holder, expires_us = excluded.expires_us`,
			id.name(), token, holder, nowUS+remaining.Microseconds())
		return err
	})
	return ok && err == nil, holder, remaining, err
}

// Renew implements leaseLocker.
func (s *sqliteBackend) Renew(ctx context.Context, id leaseID, token string, ttl time.Duration) (bool, error) {
	return s.leaseExec(ctx, "renew", `UPDATE leases SET expires_us = ?2 + ?4
		WHERE name = ?1 AND token = ?3 AND expires_us > ?2`, id, token, ceilTo(ttl, time.Millisecond)*1000)
}

// Unlock implements leaseLocker.
func (s *sqliteBackend) Unlock(ctx context.Context, id leaseID, token string) error {
	_, err := s.leaseExec(ctx, "unlock", `DELETE FROM leases WHERE name = ?1 AND token = ?3`, id, token)
	return err
}

// BreakLease implements leaseLocker.
func (s *sqliteBackend) BreakLease(ctx context.Context, id leaseID, holder string) (bool, error) {
	return s.leaseExec(ctx, "break", `DELETE FROM leases WHERE name = ?1 AND holder = ?3`, id, holder)
}

// leaseExec runs query (?1 the lease's name, ?2 now in Unix µs, then args)
// in a write transaction and reports whether it changed exactly one row.
func (s *sqliteBackend) leaseExec(ctx context.Context, op, query string, id leaseID, args ...any) (one bool, err error) {
	err = s.inTx(ctx, "lease "+op, true, func(tx *sql.Tx, nowUS int64) error {
		res, err := tx.ExecContext(ctx, query, append([]any{id.name(), nowUS}, args...)...)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		one = n == 1
		return err
	})
	return one && err == nil, err
}

// name is the row name of lease id.
func (id leaseID) name() string { return id.credential + ":" + id.region }

// Leases implements leaseLocker with one read-only transaction.
func (s *sqliteBackend) Leases(ctx context.Context, credential string) (out []LeaseInfo, err error) {
	err = s.inTx(ctx, "lease list", false, func(tx *sql.Tx, nowUS int64) error {
		rows, err := tx.QueryContext(ctx, `SELECT name, holder, expires_us FROM leases WHERE expires_us > ? ORDER BY name`, nowUS)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var name, holder string
			var exp int64
			if err := rows.Scan(&name, &holder, &exp); err != nil {
				return err
			}
			if region, ok := strings.CutPrefix(name, credential+":"); ok && !strings.Contains(region, ":") {
				out = append(out, LeaseInfo{Credential: credential, Region: region, Holder: describeHolder(holder), stored: holder,
					Remaining: time.Duration(exp-nowUS) * time.Microsecond})
			}
		}
		return rows.Err()
	})
	return out, err
}
