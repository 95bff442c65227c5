package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// PruneReport is what Prune removed (or, dry run, would remove).
type PruneReport struct {
	// Captures and Entries: captures older than the cut-off and their entries.
	Captures int64 `json:"captures"`
	Entries  int64 `json:"entries"`
	// Samples: stats samples older than the cut-off.
	Samples int64 `json:"samples"`
	// Texts: superseded text versions no remaining entry refers to (with a
	// text cut-off, see ApplyPolicy: none captured since it).
	Texts int64 `json:"texts"`
	// TextsCleared: videos whose text was removed, their id kept
	// (ApplyPolicy: not captured since the text cut-off).
	TextsCleared int64 `json:"texts_cleared"`
	// Videos: videos no capture or sample references any more (their
	// full-text index rows, text versions and latest statistics go with
	// them).
	Videos int64 `json:"videos"`
}

// pruneBatch bounds one write transaction of Prune, so that concurrent
// runs wait at most a few hundred milliseconds for the write lock.
const pruneBatch = 200

// Prune deletes captures captured before before (with their entries),
// stats samples taken before it, the superseded text versions no entry
// refers to any more, and then every video that no capture and
// no sample references any more (with its FTS rows, via the triggers, and
// its latest statistics). Runs, channels and categories are kept. It works
// in short transactions (pruneBatch captures or videos each), so running
// fetches are not blocked; a prune interrupted midway leaves a consistent
// database and can be run again.
//
// With dryRun it writes nothing and returns what it would remove: the same
// numbers, if nothing is stored meanwhile.
func (s *Store) Prune(ctx context.Context, before time.Time, dryRun bool) (PruneReport, error) {
	cut := fmtTime(before)
	var rep PruneReport
	if dryRun {
		err := s.db.QueryRowContext(ctx, `
SELECT (SELECT count(*) FROM captures WHERE captured_at < ?1),
       (SELECT count(*) FROM captures c JOIN entries e ON e.capture_id = c.id WHERE c.captured_at < ?1),
       (SELECT count(*) FROM stats_samples WHERE sampled_at < ?1),
       (SELECT count(*) FROM video_texts t JOIN videos v ON v.rowid = t.video
        WHERE NOT EXISTS (SELECT 1 FROM entries e JOIN captures c ON c.id = e.capture_id
                          WHERE e.video = t.video AND e.text = t.version AND c.captured_at >= ?1)
          AND (EXISTS (SELECT 1 FROM entries e JOIN captures c ON c.id = e.capture_id
                       WHERE e.video = v.rowid AND c.captured_at >= ?1)
               OR EXISTS (SELECT 1 FROM stats_samples x WHERE x.video = v.rowid AND x.sampled_at >= ?1))),
       (SELECT count(*) FROM videos v
        WHERE NOT EXISTS (SELECT 1 FROM entries e JOIN captures c ON c.id = e.capture_id
                          WHERE e.video = v.rowid AND c.captured_at >= ?1)
          AND NOT EXISTS (SELECT 1 FROM stats_samples x WHERE x.video = v.rowid AND x.sampled_at >= ?1))`,
			cut).Scan(&rep.Captures, &rep.Entries, &rep.Samples, &rep.Texts, &rep.Videos)
		if err != nil {
			return PruneReport{}, fmt.Errorf("cannot count what to prune: %w", err)
		}
		return rep, nil
	}
	for {
		var n, entries int64
		err := s.withTx(ctx, func(tx *sql.Tx) error {
			const pick = `SELECT id FROM captures WHERE captured_at < ? ORDER BY captured_at LIMIT ?`
			res, err := tx.ExecContext(ctx, `DELETE FROM entries WHERE capture_id IN (`+pick+`)`, cut, pruneBatch)
			if err != nil {
				return err
			}
			entries, _ = res.RowsAffected()
			res, err = tx.ExecContext(ctx, `DELETE FROM captures WHERE id IN (`+pick+`)`, cut, pruneBatch)
			if err != nil {
				return err
			}
			n, _ = res.RowsAffected()
			return nil
		})
		if err != nil {
			return rep, fmt.Errorf("cannot prune captures: %w", err)
		}
		rep.Captures += n
		rep.Entries += entries
		if n < pruneBatch {
			break
		}
	}
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM stats_samples WHERE sampled_at < ?`, cut)
		if err != nil {
			return err
		}
		rep.Samples, _ = res.RowsAffected()
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("cannot prune stats samples: %w", err)
	}
	// After the deletions above no capture or sample older than the cut-off
	// remains, so "referenced by nothing" is the plain test.
	for {
		var n int64
		err := s.withTx(ctx, func(tx *sql.Tx) error {
			res, err := tx.ExecContext(ctx, `
DELETE FROM videos WHERE rowid IN (
    SELECT v.rowid FROM videos v
    WHERE NOT EXISTS (SELECT 1 FROM entries e WHERE e.video = v.rowid)
      AND NOT EXISTS (SELECT 1 FROM stats_samples x WHERE x.video = v.rowid)
    LIMIT ?)`, pruneBatch)
			if err != nil {
				return err
			}
			n, _ = res.RowsAffected()
			return nil
		})
		if err != nil {
			return rep, fmt.Errorf("cannot prune videos: %w", err)
		}
		rep.Videos += n
		if n < pruneBatch {
			break
		}
	}
	// Versions of deleted videos went with them (ON DELETE CASCADE).
	err = s.withTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `
DELETE FROM video_texts WHERE NOT EXISTS (
    SELECT 1 FROM entries e WHERE e.video = video_texts.video AND e.text = video_texts.version)`)
		if err != nil {
			return err
		}
		rep.Texts, _ = res.RowsAffected()
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("cannot prune text versions: %w", err)
	}
	return rep, nil
}

// PruneDue reports whether any capture or stats sample is older than
// before: a cheap test (no video sweep) before an automatic Prune.
func (s *Store) PruneDue(ctx context.Context, before time.Time) (bool, error) {
	var due bool
	err := s.db.QueryRowContext(ctx, `
SELECT EXISTS (SELECT 1 FROM captures WHERE captured_at < ?1)
    OR EXISTS (SELECT 1 FROM stats_samples WHERE sampled_at < ?1)`, fmtTime(before)).Scan(&due)
	if err != nil {
		return false, fmt.Errorf("cannot check what to prune: %w", err)
	}
	return due, nil
}

// Vacuum rebuilds the database file so that the pages Prune freed go back
// to the file system (SQLite otherwise keeps them for reuse), then
// truncates the WAL. It returns the file size before and after, in bytes.
// It needs free disk space about the size of the database, and holds the
// write lock while it works (runs wait, up to busy_timeout).
func (s *Store) Vacuum(ctx context.Context) (before, after int64, err error) {
	size := func() (int64, error) {
		var pages, pageSize int64
		if err := s.db.QueryRowContext(ctx, `SELECT (SELECT page_count FROM pragma_page_count), (SELECT page_size FROM pragma_page_size)`).Scan(&pages, &pageSize); err != nil {
			return 0, err
		}
		return pages * pageSize, nil
	}
	if before, err = size(); err != nil {
		return 0, 0, fmt.Errorf("cannot vacuum: %w", err)
	}
	if _, err := s.db.ExecContext(ctx, `VACUUM`); err != nil {
		return 0, 0, fmt.Errorf("cannot vacuum: %w", err)
	}
	if _, err := s.db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return 0, 0, fmt.Errorf("cannot vacuum: %w", err)
	}
	if after, err = size(); err != nil {
		return 0, 0, fmt.Errorf("cannot vacuum: %w", err)
	}
	return before, after, nil
}
