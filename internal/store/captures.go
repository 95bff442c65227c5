package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// captureID returns the id of the capture (runID, region, kind, query),
// creating it (not complete, captured_at = ts) if it does not exist yet.
func (s *Store) captureID(ctx context.Context, tx *sql.Tx, runID int64, region, kind, query, ts string) (int64, error) {
	// The natural key finds the capture a retried or concurrent write made
	// (the no-op update makes RETURNING answer for an existing row too).
	var id int64
	err := tx.QueryRowContext(ctx, `
INSERT INTO captures (run_id, region, kind, query, captured_at) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (run_id, region, kind, query) DO UPDATE SET run_id = excluded.run_id
RETURNING id`, runID, region, kind, query, ts).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("create capture: %w", err)
	}
	return id, nil
}

// insertEntriesSQL inserts n entries, 6 parameters each: capture id, rank,
// video id (resolved to its rowid and current text version), views, likes,
// comments.
func insertEntriesSQL(n int) string {
	return `INSERT INTO entries (capture_id, rank, video, text, view_count, like_count, comment_count)
SELECT x.column1, x.column2, v.rowid, v.text_version, x.column4, x.column5, x.column6
FROM (VALUES ` + intRows(n, 6, 1, 2, 4, 5, 6) + `) AS x JOIN videos v ON v.id = x.column3`
}

// insertEntries stores videos as entries of captureID from rank firstRank
// on, with their statistics. The videos must already be in videos.
func (s *Store) insertEntries(ctx context.Context, tx *sql.Tx, captureID int64, firstRank int, videos []Video) error {
	_, err := execRows(ctx, s, tx, videos, insertEntriesSQL, func(i int, v Video) []any {
		return []any{captureID, firstRank + i, v.ID, nullInt(v.Views), nullInt(v.Likes), nullInt(v.Comments)}
	})
	if err != nil {
		return fmt.Errorf("insert entries: %w", err)
	}
	return nil
}

// CompleteCapture marks the capture (runID, region, kind, query) complete
// once its last page is stored (a run that stops earlier leaves it
// partial); a list without pages becomes a complete, empty capture
// captured at at (zero: now). An unknown runID wraps ErrNotFound.
func (s *Store) CompleteCapture(ctx context.Context, runID int64, region, kind, query string, at time.Time) error {
	if at.IsZero() {
		at = time.Now()
	}
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `
INSERT INTO captures (run_id, region, kind, query, captured_at, complete)
SELECT id, ?, ?, ?, ?, 1 FROM runs WHERE id = ?
ON CONFLICT (run_id, region, kind, query) DO UPDATE SET complete = 1`,
			region, kind, query, fmtTime(at), runID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 { // no such run: nothing inserted or updated
			return fmt.Errorf("run %d: %w", runID, ErrNotFound)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("cannot complete capture (run %d, %s, %s %q): %w", runID, region, kind, query, err)
	}
	return nil
}
