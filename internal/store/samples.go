package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Sample is the statistics of one video fetched outside a chart
// (videos.batchGetStats). Nil counts are unknown (stored as NULL).
type Sample struct {
	VideoID                string
	Views, Likes, Comments *int64
}

// DueForStats returns the ids of videos due for a statistics sample, oldest
// chart appearance last: on a chart of region since followedSince, not on
// runID's, and whose newest statistics (an entry with a view count, or a
// sample) are older than sampledBefore. Index lookups only.
func (s *Store) DueForStats(ctx context.Context, region string, runID int64, followedSince, sampledBefore time.Time) ([]string, error) {
	ids, err := column[string](ctx, s.db, `
WITH followed AS (
    SELECT e.video, max(c.captured_at) AS last_chart
    FROM captures c JOIN entries e ON e.capture_id = c.id
    WHERE c.region = ?1 AND c.kind = 'chart' AND c.query = '' AND c.captured_at >= ?2
    GROUP BY e.video
)
SELECT v.id
FROM followed f JOIN videos v ON v.rowid = f.video
WHERE f.video NOT IN (
        SELECT e.video FROM captures c JOIN entries e ON e.capture_id = c.id
        WHERE c.run_id = ?3 AND c.region = ?1 AND c.kind = 'chart' AND c.query = '')
  AND coalesce((SELECT max(c.captured_at) FROM entries e JOIN captures c ON c.id = e.capture_id
                WHERE e.video = f.video AND e.view_count IS NOT NULL), '') < ?4
  AND coalesce((SELECT max(x.sampled_at) FROM stats_samples x WHERE x.video = f.video), '') < ?4
ORDER BY f.last_chart DESC, v.id`, region, fmtTime(followedSince), runID, fmtTime(sampledBefore))
	if err != nil {
		return nil, fmt.Errorf("cannot list videos due for statistics in %s: %w", region, err)
	}
	return ids, nil
}

// SaveSamples stores samples taken at at (zero: now) in one transaction and
// returns how many it stored (a repeat at the same time and unknown videos
// are skipped); the latest statistics stay the latest capture's.
func (s *Store) SaveSamples(ctx context.Context, samples []Sample, at time.Time) (int, error) {
	if len(samples) == 0 {
		return 0, nil
	}
	if at.IsZero() {
		at = time.Now()
	}
	ts := fmtTime(at)
	var stored int64
	err := s.withTx(ctx, func(tx *sql.Tx) (err error) {
		stored, err = execRows(ctx, s, tx, samples, s.insertSamplesSQL, func(_ int, x Sample) []any {
			return []any{x.VideoID, ts, nullInt(x.Views), nullInt(x.Likes), nullInt(x.Comments)}
		})
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("cannot save %d stats samples: %w", len(samples), err)
	}
	return int(stored), nil
}

// insertSamplesSQL inserts n samples (video id, sampled at, views, likes,
// comments); on PostgreSQL FOR KEY SHARE skips a video being deleted.
func (s *Store) insertSamplesSQL(n int) string {
	lock := ""
	if s.pg {
		lock = ` FOR KEY SHARE OF v`
	}
	return `INSERT INTO stats_samples (video, sampled_at, view_count, like_count, comment_count)
SELECT v.rowid, x.column2, x.column3, x.column4, x.column5
FROM (VALUES ` + intRows(n, 5, 3, 4, 5) + `) AS x JOIN videos v ON v.id = x.column1
WHERE true` + lock + `
ON CONFLICT (video, sampled_at) DO NOTHING`
}
