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
	// Rows of another configuration (more slots, another span) go.
	sqlCounterPrune = `DELETE FROM quota_counter
		WHERE credential = ? AND bucket = ? AND (pos >= ? OR span <> ?)`
	sqlCounterRefund = `UPDATE quota_counter SET units = max(units - ?, 0)
		WHERE credential = ? AND bucket = ? AND pos = ? AND slot = ? AND span = ?`
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
// at max(now, newest), newest (the latest stamp recorded in it, 0 if none)
// and stale (rows of another configuration are left, for counterAdd to
// delete).
type sqliteCounters struct {
	w      counterWindow
	newest int64
	stale  bool
}

// counterRead reads counter bucket b at nowUS (see sqliteCounters). A
// read-only database older than version 3 has no counters: an empty
// window.
func (s *SQLiteBackend) counterRead(ctx context.Context, tx *sql.Tx, credential string, b Bucket, nowUS int64) (sqliteCounters, error) {
	cs := counterSpecOf(b)
	out := sqliteCounters{w: counterWindow{cs: cs, now: nowUS, u: make([]int64, cs.n)}}
	if _, ok := s.stmts[sqlCounterRead]; !ok {
		return out, nil
	}
	st, err := s.stmt(ctx, tx, sqlCounterRead)
	if err != nil {
		return out, err
	}
	rows, err := st.QueryContext(ctx, credential, b.Name)
	if err != nil {
		return out, err
	}
	defer rows.Close()
	n := int64(cs.n)
	type row struct{ slot, units int64 }
	var kept []row
	for rows.Next() {
		var pos, slot, span, units, ts int64
		if err := rows.Scan(&pos, &slot, &span, &units, &ts); err != nil {
			return out, err
		}
		if span != cs.slotUS || pos >= n || slot%n != pos {
			out.stale = true // another configuration's row
			continue
		}
		out.newest = max(out.newest, ts)
		kept = append(kept, row{slot, units})
	}
	if err := rows.Err(); err != nil {
		return out, err
	}
	w := &out.w
	w.now = max(nowUS, out.newest)
	c, _ := cs.slot(w.now)
	for _, r := range kept {
		if i := r.slot - (c - n + 1); i >= 0 && i < n {
			w.u[i] = r.units
		}
	}
	return out, nil
}

// counterAdd records units stamped at in counter bucket b, and deletes the
// rows of another configuration when counterRead found some (stale).
func (s *SQLiteBackend) counterAdd(ctx context.Context, tx *sql.Tx, credential string, b Bucket, at, units int64, stale bool) error {
	cs := counterSpecOf(b)
	j, _ := cs.slot(at)
	add, err := s.stmt(ctx, tx, sqlCounterAdd)
	if err != nil {
		return err
	}
	if _, err := add.ExecContext(ctx, credential, b.Name, j%int64(cs.n), j, cs.slotUS, units, at); err != nil || !stale {
		return err
	}
	prune, err := s.stmt(ctx, tx, sqlCounterPrune)
	if err != nil {
		return err
	}
	_, err = prune.ExecContext(ctx, credential, b.Name, cs.n, cs.slotUS)
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
