package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// ApplyPolicy deletes what a storage policy (config store.policy) no
// longer allows, in short transactions like Prune:
//
//   - statsBefore (zero: nothing): Prune — captures with their entries and
//     stats samples older than it, then the videos nothing references;
//   - textBefore (zero: nothing): the text (title, description, tags,
//     channel title, category, thumbnail) of every video not captured since
//     (nor refreshed, RefreshText) since then is removed, its id, channel id, publish time and duration kept,
//     and the superseded text versions no capture since then refers to are
//     deleted. A capture refreshes its video's text (the API returned it
//     again); statistics samples (videos.batchGetStats) do not.
//
// With dryRun it writes nothing and returns what it would remove.
func (s *Store) ApplyPolicy(ctx context.Context, statsBefore, textBefore time.Time, dryRun bool) (PruneReport, error) {
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
	// Videos whose text is older than the cut-off and not yet removed.
	const stale = staleText
	const oldVersions = `
SELECT t.rowid FROM video_texts t
WHERE NOT EXISTS (SELECT 1 FROM entries e JOIN captures c ON c.id = e.capture_id
                  WHERE e.video = t.video AND e.text = t.version AND c.captured_at >= ?1)`
	if dryRun {
		// What Prune would delete is not counted twice: its videos go
		// with their text.
		keep := ""
		if !statsBefore.IsZero() {
			keep = `AND rowid IN (SELECT e.video FROM entries e JOIN captures c ON c.id = e.capture_id WHERE c.captured_at >= ?2
                 UNION SELECT video FROM stats_samples WHERE sampled_at >= ?2)`
		}
		var texts, cleared int64
		err := s.db.QueryRowContext(ctx, `
SELECT (SELECT count(*) FROM videos WHERE rowid IN (`+stale+`) `+keep+`),
       (SELECT count(*) FROM video_texts WHERE rowid IN (`+oldVersions+`) AND video IN (SELECT rowid FROM videos WHERE true `+keep+`))`,
			cut, fmtTime(statsBefore)).Scan(&cleared, &texts)
		if err != nil {
			return rep, fmt.Errorf("cannot count text to remove: %w", err)
		}
		// Prune's count of versions is part of this one (its cut-off is not
		// later than the text's).
		rep.Texts, rep.TextsCleared = texts, cleared
		return rep, nil
	}
	for {
		var n int64
		err := s.withTx(ctx, func(tx *sql.Tx) error {
			res, err := tx.ExecContext(ctx, `
UPDATE videos SET title = '', description = '', tags = '', channel_title = '', category_id = '', thumbnail_url = ''
WHERE rowid IN (`+stale+` LIMIT ?2)`, cut, pruneBatch)
			if err != nil {
				return err
			}
			n, _ = res.RowsAffected()
			return nil
		})
		if err != nil {
			return rep, fmt.Errorf("cannot remove old text: %w", err)
		}
		rep.TextsCleared += n
		if n < pruneBatch {
			break
		}
	}
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM video_texts WHERE rowid IN (`+oldVersions+`)`, cut)
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		rep.Texts += n
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("cannot remove old text versions: %w", err)
	}
	return rep, nil
}

// LegacyData reports whether the database held captures or stats samples
// before store.policy existed (store_meta legacy_data): then an unset
// policy keeps everything, as an existing database is never pruned by a
// new default.
func (s *Store) LegacyData(ctx context.Context) (bool, error) {
	var v string
	err := s.db.QueryRowContext(ctx, `SELECT value FROM store_meta WHERE key = 'legacy_data'`).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("cannot read store_meta: %w", err)
	}
	return v == "1", nil
}
