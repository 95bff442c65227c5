package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// textUsedAt is when a video's text was last captured or refreshed: the
// greater of the two (written as CASE: SQLite's max(a, b) is PostgreSQL's
// greatest(a, b)).
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
// than before and not removed yet, oldest first: what store.policy amended
// refreshes (ApplyCutoffs removes the text of the rest).
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

// RefreshText stores the text of vs as refreshed at at, outside any
// capture: its age starts again, a changed text becomes a new version, and
// statistics are not touched. Videos not stored are ignored. One
// transaction, once per id (the last given wins), in id order.
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
WHERE id = ?8`, v.Title, v.Description, v.ChannelTitle, v.CategoryID, joinTags(v.Tags), v.ThumbnailURL, ts, v.ID)
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
	count := `json_extract(calls, '$."' || ?1 || '"')`
	if s.pg {
		count = `CAST(calls::jsonb ->> ?1 AS BIGINT)`
	}
	err := s.db.QueryRowContext(ctx, `
SELECT CAST(coalesce(sum(`+count+`), 0) AS BIGINT) FROM runs
WHERE credential = ?2 AND started_at >= ?3`, method, credential, fmtTime(since)).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("cannot count %s calls: %w", method, err)
	}
	return n, nil
}
