package quota

import (
	"context"
	"database/sql"
)

// The SQLite backend's counter buckets (schema version 3): table
// quota_counter holds a ring of n rows per (credential, bucket), row pos =
// j mod n holding counter j of span µs (the sub-window length; a row whose
// slot or span differs holds another counter, or one of an older
// configuration, and counts as 0):
//
//	pos    position in the ring, 0..n-1
//	slot   the counter's index j (it covers [j*span, (j+1)*span) µs)
//	span   the counter's length in µs
//	units  units admitted into it
//	ts_us  the latest stamp recorded at this position (clock steps)
const (
	sqlCounterRead = `SELECT pos, slot, span, units, ts_us FROM quota_counter
		WHERE credential = ? AND bucket = ?`
	// Adds to counter slot at pos, or starts it over when pos held another.
	// (Every right-hand side reads the row's values before the update.)
	sqlCounterAdd = `INSERT INTO quota_counter (credential, bucket, pos, slot, span, units, ts_us)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (credential, bucket, pos) DO UPDATE SET
			units = CASE WHEN slot = excluded.slot AND span = excluded.span
				THEN units + excluded.units ELSE excluded.units END,
			slot = excluded.slot, span = excluded.span, ts_us = max(ts_us, excluded.ts_us)`
	// Every counter of a bucket goes (its form is converted: switch.go).
	sqlCounterDrop   = `DELETE FROM quota_counter WHERE credential = ? AND bucket = ?`
	sqlCounterRefund = `UPDATE quota_counter SET units = max(units - ?, 0)
		WHERE credential = ? AND bucket = ? AND pos = ? AND slot = ? AND span = ?`
	// A log bucket's entries from ts_us >= ?4 on, summed per counter of ?1
	// µs (j, units, latest stamp): a log converted into counters.
	sqlLogByCounter = `SELECT ts_us / ?1 AS j, sum(cost), max(ts_us) FROM quota_log
		WHERE credential = ?2 AND bucket = ?3 AND ts_us >= ?4 GROUP BY j`
	// Every entry of a bucket goes (its log is converted into counters).
	sqlLogDrop = `DELETE FROM quota_log WHERE credential = ? AND bucket = ?`
)

// sqliteMigrateV3 adds quota_counter to a version 2 database.
const sqliteMigrateV3 = `
CREATE TABLE IF NOT EXISTS quota_counter (
	credential TEXT    NOT NULL,
	bucket     TEXT    NOT NULL,
	pos        INTEGER NOT NULL,
	slot       INTEGER NOT NULL,
	span       INTEGER NOT NULL,
	units      INTEGER NOT NULL,
	ts_us      INTEGER NOT NULL,
	PRIMARY KEY (credential, bucket, pos)
) WITHOUT ROWID;
PRAGMA user_version = 3;
`

// sqliteCounters is what counterRead found of a counter bucket: its window
// at max(now, newest) with any old form of the bucket folded in (switch.go),
// newest (the latest stamp recorded in its own counters, 0 if none) and
// convert (an old form is stored: counters of another geometry or log
// entries, which counterAdd replaces by the window's counters).
type sqliteCounters struct {
	w       counterWindow
	newest  int64
	convert bool
}

// counterRead reads counter bucket b at nowUS (see sqliteCounters). A
// read-only database older than version 3 has no counters: only its log
// entries of b, if any, are folded in.
func (s *SQLiteBackend) counterRead(ctx context.Context, tx *sql.Tx, credential string, b Bucket, nowUS int64) (sqliteCounters, error) {
	cs := counterSpecOf(b)
	out := sqliteCounters{w: counterWindow{cs: cs, now: nowUS, u: make([]int64, cs.n)}}
	rows, err := s.counterRows(ctx, tx, credential, b.Name)
	if err != nil {
		return out, err
	}
	n := int64(cs.n)
	var kept []sqliteCounterRow
	var old []oldCounter
	for _, r := range rows {
		if r.span != cs.slotUS || r.pos >= n || r.slot%n != r.pos {
			old = append(old, r.oldCounter) // another geometry's
			continue
		}
		out.newest = max(out.newest, r.ts)
		kept = append(kept, r)
	}
	w := &out.w
	w.now = max(nowUS, out.newest)
	c, _ := cs.slot(w.now)
	for _, r := range kept {
		if i := r.slot - (c - n + 1); i >= 0 && i < n {
			w.u[i] = r.units
		}
	}
	logChunks, err := s.logChunks(ctx, tx, credential, b.Name, cs.slotUS, (c-n+1)*cs.slotUS)
	if err != nil {
		return out, err
	}
	w.fold(counterChunks(old, w.now))
	w.fold(logChunks)
	out.convert = len(old) > 0 || len(logChunks) > 0
	return out, nil
}

// logChunks returns the log entries of bucket stamped at or after fromUS,
// one chunk per counter of spanUS µs (its units at its latest stamp).
func (s *SQLiteBackend) logChunks(ctx context.Context, tx *sql.Tx, credential, bucket string, spanUS, fromUS int64) ([]usageChunk, error) {
	st, err := s.stmt(ctx, tx, sqlLogByCounter)
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(ctx, spanUS, credential, bucket, max(fromUS, 0))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []usageChunk
	for rows.Next() {
		var j, units, at int64
		if err := rows.Scan(&j, &units, &at); err != nil {
			return nil, err
		}
		out = append(out, usageChunk{at: at, units: units})
	}
	return out, rows.Err()
}

// counterAdd records units stamped at in counter bucket b. When counterRead
// found an old form (cr.convert), it is replaced first: the bucket's rows
// and log entries are deleted and cr's window written as its counters.
func (s *SQLiteBackend) counterAdd(ctx context.Context, tx *sql.Tx, credential string, b Bucket, cr sqliteCounters, at, units int64) error {
	cs := counterSpecOf(b)
	add, err := s.stmt(ctx, tx, sqlCounterAdd)
	if err != nil {
		return err
	}
	if cr.convert {
		for _, q := range []string{sqlCounterDrop, sqlLogDrop} {
			drop, err := s.stmt(ctx, tx, q)
			if err != nil {
				return err
			}
			if _, err := drop.ExecContext(ctx, credential, b.Name); err != nil {
				return err
			}
		}
		c, _ := cs.slot(cr.w.now)
		for i, u := range cr.w.u {
			j := c - int64(cs.n) + 1 + int64(i)
			if u == 0 || j < 0 {
				continue
			}
			if _, err := add.ExecContext(ctx, credential, b.Name, j%int64(cs.n), j, cs.slotUS, u, min((j+1)*cs.slotUS-1, cr.w.now)); err != nil {
				return err
			}
		}
	}
	j, _ := cs.slot(at)
	_, err = add.ExecContext(ctx, credential, b.Name, j%int64(cs.n), j, cs.slotUS, units, at)
	return err
}

// counterRefund takes units stamped at back from counter bucket b when
// at is still in the window at nowUS and its counter is still kept.
func (s *SQLiteBackend) counterRefund(ctx context.Context, tx *sql.Tx, credential string, b Bucket, at, units, nowUS int64) error {
	if at <= nowUS-b.Window.Microseconds() {
		return nil
	}
	cs := counterSpecOf(b)
	j, _ := cs.slot(at)
	refund, err := s.stmt(ctx, tx, sqlCounterRefund)
	if err != nil {
		return err
	}
	_, err = refund.ExecContext(ctx, units, credential, b.Name, j%int64(cs.n), j, cs.slotUS)
	return err
}

// sqliteCounterRow is one row of quota_counter: a counter (oldCounter)
// at ring position pos, ts its latest stamp (Unix µs).
type sqliteCounterRow struct {
	oldCounter
	pos, ts int64
}

// counterRows returns every quota_counter row of bucket, whatever its
// geometry; none on a read-only database older than version 3.
func (s *SQLiteBackend) counterRows(ctx context.Context, tx *sql.Tx, credential, bucket string) ([]sqliteCounterRow, error) {
	if _, ok := s.stmts[sqlCounterRead]; !ok {
		return nil, nil
	}
	st, err := s.stmt(ctx, tx, sqlCounterRead)
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(ctx, credential, bucket)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []sqliteCounterRow
	for rows.Next() {
		var r sqliteCounterRow
		if err := rows.Scan(&r.pos, &r.slot, &r.span, &r.units, &r.ts); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// oldCounters returns the counters of log bucket bucket: its old form
// (switch.go), if it had one.
func (s *SQLiteBackend) oldCounters(ctx context.Context, tx *sql.Tx, credential, bucket string) ([]oldCounter, error) {
	rows, err := s.counterRows(ctx, tx, credential, bucket)
	out := make([]oldCounter, len(rows))
	for i, r := range rows {
		out[i] = r.oldCounter
	}
	return out, err
}

// convertCounters turns the counters of log bucket b, if it had that form
// (switch.go), into entries appended to its log (rid 0: no Reservation
// names them) and deletes them: one read of an empty range when there are
// none.
func (s *SQLiteBackend) convertCounters(ctx context.Context, tx *sql.Tx, credential string, b Bucket, nowUS int64) error {
	old, err := s.oldCounters(ctx, tx, credential, b.Name)
	if err != nil || len(old) == 0 {
		return err
	}
	st, err := s.readLog(ctx, tx, credential, b.Name, sqliteCutoffUS(b, nowUS))
	if err != nil {
		return err
	}
	insert, err := s.stmt(ctx, tx, sqlInsert)
	if err != nil {
		return err
	}
	cum, seq := st.lastCum, st.lastSeq
	for _, ch := range restamp(counterChunks(old, nowUS), st.lastTS) {
		cum, seq = cum+ch.units, seq+1
		if _, err := insert.ExecContext(ctx, credential, b.Name, cum, seq, ch.at, ch.units, 0); err != nil {
			return err
		}
	}
	drop, err := s.stmt(ctx, tx, sqlCounterDrop)
	if err != nil {
		return err
	}
	_, err = drop.ExecContext(ctx, credential, b.Name)
	return err
}
