package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// PruneReport is what Prune removed (or, dry run, would remove).
type PruneReport struct {
	// Captures and Entries: captures older than the cut-off and their entries.
	Captures int64 `json:"captures"`
	Entries  int64 `json:"entries"`
	// Samples: stats samples older than the cut-off.
	Samples int64 `json:"samples"`
	// Texts: superseded text versions no remaining entry (with a text
	// cut-off: none captured since it) refers to.
	Texts int64 `json:"texts"`
	// TextsCleared: videos whose text was removed, their id kept.
	TextsCleared int64 `json:"texts_cleared"`
	// Videos: videos nothing references any more (their index rows, text
	// versions and latest statistics go with them).
	Videos int64 `json:"videos"`
}

// pruneBatch bounds one write transaction of Prune: runs wait at most a few
// hundred milliseconds for the write lock.
const pruneBatch = 200

// policyLockKey is the pg_advisory_xact_lock key of every write transaction
// of Prune and ApplyCutoffs on PostgreSQL: hosts applying the policy at once
// take turns, so each row is deleted (and counted) once and none deadlock.
const policyLockKey = migrationLockKey + 1

// copyLockKey is held by each CopyFrom for its whole length (copies take turns), tried shared by
// each write transaction of the storage policy (errCopying when held): what a copy inserted
// before what references it is never an orphan to the policy.
const copyLockKey = migrationLockKey + 2

// pruneTx is withTx for the storage policy's writes (policyLockKey), with the dialect's
// policyCache around fn.
func (s *Store) pruneTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return s.withTx(ctx, func(tx *sql.Tx) error {
		if s.d.lockPolicy != nil {
			if err := s.d.lockPolicy(ctx, tx); err != nil {
				return err
			}
		}
		if err := execEach(ctx, tx, s.d.policyCache[0]); err != nil {
			return err
		}
		err := fn(tx)
		if restore := execEach(context.WithoutCancel(ctx), tx, s.d.policyCache[1]); err == nil {
			err = restore
		}
		return err
	})
}

// execEach runs each of stmts in tx.
func execEach(ctx context.Context, tx *sql.Tx, stmts []string) error {
	for _, q := range stmts {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// pruneExec runs one statement in a pruneTx; it returns the rows changed.
func (s *Store) pruneExec(ctx context.Context, query string, args ...any) (n int64, err error) {
	err = s.pruneTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, query, args...)
		if err == nil {
			n, err = res.RowsAffected()
		}
		return err
	})
	return n, err
}

// sweep runs batches, a pruneTx each (sweepBatch), until one picks fewer than pruneBatch ids: pick
// is a SELECT of table's ids in ascending order, binding after args the last id picked (it looks
// above it only) and its LIMIT, pruneBatch; it returns the rows each write changed. The cursor
// keeps a sweep linear in what it deletes: a pick never scans again the rows earlier batches passed
// (without it, each batch rescanned every row before the next to delete). On PostgreSQL picked rows
// are locked, skipping those another prune holds (it deletes them), so writes test their condition
// again.
func (s *Store) sweep(ctx context.Context, pick, table string, args, lead []any,
	writes ...string) ([]int64, error) {
	pick += strings.ReplaceAll(s.d.pickLocked, "{table}", table)
	total := make([]int64, len(writes))
	last := int64(math.MinInt64)
	for {
		var picked, n []int64
		err := s.pruneTx(ctx, func(tx *sql.Tx) (err error) {
			picked, n, err = sweepBatch(ctx, tx, pick, append(slices.Clip(args), last, pruneBatch), lead, writes)
			return err
		})
		if err != nil {
			return total, err
		}
		for i := range n {
			total[i] += n[i]
		}
		if len(picked) < pruneBatch {
			return total, nil
		}
		last = picked[len(picked)-1]
	}
}

// sweepBatch runs pick with args, then each of writes on the ids picked ({ids}: their placeholders,
// bound after lead); it returns the ids and the rows each write changed (nil when none picked).
func sweepBatch(ctx context.Context, tx *sql.Tx, pick string, args, lead []any, writes []string) ([]int64, []int64, error) {
	picked, err := column[int64](ctx, tx, pick, args...)
	if err != nil || len(picked) == 0 {
		return picked, nil, err
	}
	ids, marks := slices.Clone(lead), make([]string, len(picked))
	for i, id := range picked {
		ids, marks[i] = append(ids, id), fmt.Sprintf("?%d", len(lead)+1+i)
	}
	n := make([]int64, len(writes))
	for i, w := range writes {
		res, err := tx.ExecContext(ctx, strings.ReplaceAll(w, "{ids}", strings.Join(marks, ",")), ids...)
		if err != nil {
			return picked, n, err
		}
		n[i], _ = res.RowsAffected()
	}
	return picked, n, nil
}

// Prune deletes captures (with entries) and stats samples older than before, then the videos and
// text versions nothing references any more, in short transactions that block no run (an
// interrupted prune leaves a consistent database). With dryRun it only counts.
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
                          WHERE `+s.d.onVideo("t.video")+` AND e.text = t.version AND c.captured_at >= ?1)
          AND (EXISTS (SELECT 1 FROM entries e JOIN captures c ON c.id = e.capture_id
                       WHERE `+s.d.onVideo("v.rowid")+` AND c.captured_at >= ?1)
               OR EXISTS (SELECT 1 FROM stats_samples x WHERE x.video = v.rowid AND x.sampled_at >= ?1))),
       (SELECT count(*) FROM videos v
        WHERE NOT EXISTS (SELECT 1 FROM entries e JOIN captures c ON c.id = e.capture_id
                          WHERE `+s.d.onVideo("v.rowid")+` AND c.captured_at >= ?1)
          AND NOT EXISTS (SELECT 1 FROM stats_samples x WHERE x.video = v.rowid AND x.sampled_at >= ?1))`,
			cut).Scan(&rep.Captures, &rep.Entries, &rep.Samples, &rep.Texts, &rep.Videos)
		if err != nil {
			return PruneReport{}, fmt.Errorf("cannot count what to prune: %w", err)
		}
		return rep, nil
	}
	n, err := s.sweep(ctx, `SELECT id FROM captures WHERE captured_at < ?1 AND id > ?2 ORDER BY id LIMIT ?3`, "captures",
		[]any{cut}, nil, s.d.deleteEntries, `DELETE FROM captures WHERE id IN ({ids})`)
	rep.Entries, rep.Captures = n[0], n[1]
	if err != nil {
		return rep, fmt.Errorf("cannot prune captures: %w", err)
	}
	if rep.Samples, err = s.pruneExec(ctx, `DELETE FROM stats_samples WHERE sampled_at < ?`, cut); err != nil {
		return rep, fmt.Errorf("cannot prune stats samples: %w", err)
	}
	// After the deletions above no capture or sample older than the cut-off
	// remains, so "referenced by nothing" is the plain test.
	unreferenced := `NOT EXISTS (SELECT 1 FROM entries e WHERE ` + s.d.onVideo("videos.rowid") + `)
  AND NOT EXISTS (SELECT 1 FROM stats_samples x WHERE x.video = videos.rowid)`
	n, err = s.sweep(ctx, `SELECT rowid FROM videos WHERE rowid > ?1 AND `+unreferenced+` ORDER BY rowid LIMIT ?2`, "videos",
		nil, nil, slices.Concat(s.d.mergeOff, []string{`DELETE FROM videos WHERE rowid IN ({ids}) AND ` + unreferenced}, s.d.mergeOn)...)
	if rep.Videos = n[len(s.d.mergeOff)]; err != nil {
		return rep, fmt.Errorf("cannot prune videos: %w", err)
	}
	// Versions of deleted videos went with them (ON DELETE CASCADE).
	if rep.Texts, err = s.pruneExec(ctx, `
DELETE FROM video_texts WHERE NOT EXISTS (
    SELECT 1 FROM entries e WHERE `+s.d.onVideo("video_texts.video")+` AND e.text = video_texts.version)`); err != nil {
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

// ApplyCutoffs deletes what a policy's cut-offs (zero: none) no longer allow: statsBefore is
// Prune's; textBefore removes the text of videos neither captured nor refreshed since (id, channel
// id, publish time and duration kept) and the versions no capture since refers to. With dryRun it
// writes nothing and returns what it would remove.
func (s *Store) ApplyCutoffs(ctx context.Context, statsBefore, textBefore time.Time, dryRun bool) (PruneReport, error) {
	var rep PruneReport
	if !statsBefore.IsZero() {
		var err error
		if rep, err = s.Prune(ctx, statsBefore, dryRun); err != nil {
			return rep, err
		}
	}
	if textBefore.IsZero() {
		return rep, nil
	}
	if !statsBefore.IsZero() && textBefore.Before(statsBefore) {
		return rep, fmt.Errorf("cannot apply policy: text cut-off %s before the statistics cut-off %s", textBefore, statsBefore)
	}
	cut := fmtTime(textBefore)
	oldVersions := `
SELECT t.rowid FROM video_texts t
WHERE NOT EXISTS (SELECT 1 FROM entries e JOIN captures c ON c.id = e.capture_id
                  WHERE ` + s.d.onVideo("t.video") + ` AND e.text = t.version AND c.captured_at >= ?1)`
	if dryRun {
		// What Prune deletes is not counted twice: its videos go with their text.
		keep := ""
		if !statsBefore.IsZero() {
			keep = `AND rowid IN (SELECT e.video FROM entries e JOIN captures c ON c.id = e.capture_id WHERE c.captured_at >= ?2
                 UNION SELECT video FROM stats_samples WHERE sampled_at >= ?2)`
		}
		var texts, cleared int64
		err := s.db.QueryRowContext(ctx, `
SELECT (SELECT count(*) FROM videos WHERE rowid IN (`+staleText+`) `+keep+`),
       (SELECT count(*) FROM video_texts WHERE rowid IN (`+oldVersions+`) AND video IN (SELECT rowid FROM videos WHERE true `+keep+`))`,
			cut, fmtTime(statsBefore)).Scan(&cleared, &texts)
		if err != nil {
			return rep, fmt.Errorf("cannot count text to remove: %w", err)
		}
		// Prune's count of versions is part of this one (its cut-off is not later).
		rep.Texts, rep.TextsCleared = texts, cleared
		return rep, nil
	}
	n, err := s.sweep(ctx, staleText+` AND v.rowid > ?2 ORDER BY v.rowid LIMIT ?3`, "v", []any{cut}, []any{cut}, `
UPDATE videos SET title = '', description = '', tags = '', channel_title = '', category_id = '', thumbnail_url = ''
WHERE rowid IN (`+staleText+` AND v.rowid IN ({ids}))`)
	if rep.TextsCleared += n[0]; err != nil {
		return rep, fmt.Errorf("cannot remove old text: %w", err)
	}
	texts, err := s.pruneExec(ctx, `DELETE FROM video_texts WHERE rowid IN (`+oldVersions+`)`, cut)
	if rep.Texts += texts; err != nil {
		return rep, fmt.Errorf("cannot remove old text versions: %w", err)
	}
	return rep, nil
}

// LegacyData reports whether the database held captures or stats samples
// before store.policy existed (store_meta legacy_data; see InForce).
func (s *Store) LegacyData(ctx context.Context) (bool, error) {
	var legacy bool
	err := s.db.QueryRowContext(ctx,
		`SELECT EXISTS (SELECT 1 FROM store_meta WHERE key = 'legacy_data' AND value = '1')`).Scan(&legacy)
	if err != nil {
		return false, fmt.Errorf("cannot read store_meta: %w", err)
	}
	return legacy, nil
}

// textUsedAt is when a video's text was last captured or refreshed (a CASE:
// SQLite's max(a, b) is PostgreSQL's greatest).
const textUsedAt = `CASE WHEN coalesce(st.last_seen_at, v.first_seen_at) > coalesce(v.text_refreshed_at, '')
    THEN coalesce(st.last_seen_at, v.first_seen_at) ELSE coalesce(v.text_refreshed_at, '') END`

// staleText selects the rowid of every video whose text is older than ?1
// (neither captured nor refreshed since) and not yet removed.
const staleText = `
SELECT v.rowid FROM videos v LEFT JOIN video_stats st ON st.video_rowid = v.rowid
WHERE ` + textUsedAt + ` < ?1
  AND (v.title <> '' OR v.description <> '' OR v.tags <> '' OR v.channel_title <> ''
       OR v.category_id <> '' OR v.thumbnail_url <> '')`

// StaleText returns the ids of at most limit videos whose text is older
// than before and not removed yet, oldest first (what amended refreshes).
func (s *Store) StaleText(ctx context.Context, before time.Time, limit int) ([]string, error) {
	if limit <= 0 {
		return nil, nil
	}
	ids, err := column[string](ctx, s.db, `
SELECT v.id FROM videos v LEFT JOIN video_stats st ON st.video_rowid = v.rowid
WHERE v.rowid IN (`+staleText+`)
ORDER BY `+textUsedAt+`, v.rowid LIMIT ?2`,
		fmtTime(before), limit)
	if err != nil {
		return nil, fmt.Errorf("cannot list stale text: %w", err)
	}
	return ids, nil
}

// RefreshText stores the text of vs (once per id, the last wins; unknown
// ids ignored) as refreshed at at, in one transaction: its age starts
// again, a changed text becomes a new version, statistics are untouched.
func (s *Store) RefreshText(ctx context.Context, vs []Video, at time.Time) error {
	ts := fmtTime(at)
	return s.withTx(ctx, func(tx *sql.Tx) error {
		for _, v := range lastByID(vs, videoID) {
			_, err := tx.ExecContext(ctx, `
UPDATE videos SET
    text_version  = text_version + CASE WHEN `+refreshChanged+` THEN 1 ELSE 0 END,
    text_since    = CASE WHEN `+refreshChanged+` THEN ?7 ELSE text_since END,
    title = ?1, description = ?2, channel_title = ?3, category_id = ?4, tags = ?5, thumbnail_url = ?6,
    text_refreshed_at = ?7
WHERE id = ?8`, noNUL(v.Title), noNUL(v.Description), noNUL(v.ChannelTitle), noNUL(v.CategoryID), noNUL(joinTags(v.Tags)),
				noNUL(v.ThumbnailURL), ts, v.ID)
			if err != nil {
				return fmt.Errorf("cannot refresh the text of %s: %w", v.ID, err)
			}
		}
		return nil
	})
}

// refreshChanged is textChanged for RefreshText's parameters ?1-?6.
const refreshChanged = `(title IS DISTINCT FROM ?1 OR description IS DISTINCT FROM ?2 OR channel_title IS DISTINCT FROM ?3
    OR category_id IS DISTINCT FROM ?4 OR tags IS DISTINCT FROM ?5 OR thumbnail_url IS DISTINCT FROM ?6)`

// CallsSince returns how many calls of method the runs of credential
// started at or after since recorded (runs.calls).
func (s *Store) CallsSince(ctx context.Context, credential, method string, since time.Time) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `
SELECT CAST(coalesce(sum(`+s.d.callCount+`), 0) AS BIGINT) FROM runs
WHERE credential = ?2 AND started_at >= ?3`, method, credential, fmtTime(since)).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("cannot count %s calls: %w", method, err)
	}
	return n, nil
}

// errCopying is the storage policy's error while a copy is in progress.
var errCopying = errors.New("a copy into this database is in progress: the storage policy applies once it ended")
