package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// exportCacheKiB is the page cache of Export's connection: enough for the
// hot part of the videos table (each video is on ~50 charts), well under the
// 100 MB export budget (Go heap and buffers take the rest).
const exportCacheKiB = 8 << 10

// ExportQuery selects the chart captures (kind chart) Export streams.
type ExportQuery struct {
	// Regions keeps only these regions (upper case); empty means all.
	Regions []string
	// Since and Until bound captured_at (inclusive); zero is unbounded.
	Since, Until time.Time
	// EveryDay keeps, per region and UTC day, only the last complete
	// capture of the day (the public datasets' one row per video per
	// day); otherwise every capture, partial ones included.
	EveryDay bool
	// NoDescription leaves ExportRow.Description empty without reading it
	// (a description is most of a row's bytes).
	NoDescription bool
}

// ExportRow is one entry of an exported capture. Export reuses one
// ExportRow for every row: copy what must outlive the callback.
type ExportRow struct {
	CaptureID int64
	RunID     int64
	Region    string
	// CapturedAt is the capture time (UTC); Complete its complete flag.
	CapturedAt time.Time
	Complete   bool
	// Rank is 1-based.
	Rank         int
	VideoID      string
	Title        string
	Description  string
	ChannelID    string
	ChannelTitle string
	CategoryID   string
	// Tags are joined with '\n' as stored ("" = none).
	Tags string
	// PublishedAt is the zero time when unknown; Duration "" when unknown.
	PublishedAt  time.Time
	Duration     string
	ThumbnailURL string
	// Views, Likes and Comments are the entry's statistics; Valid false
	// is unknown.
	Views, Likes, Comments sql.NullInt64
}

// Export streams the chart entries selected by q to fn in capture order
// (captured_at, then id) and rank order within a capture, with constant
// memory: one capture's entries are read at a time, row by row (only the
// selected captures' headers are listed first, ~100 bytes each). fn's error stops the
// export and is returned as is; so is ctx's.
func (s *Store) Export(ctx context.Context, q ExportQuery, fn func(*ExportRow) error) error {
	caps, err := s.exportCaptures(ctx, q)
	if err != nil {
		return err
	}
	desc := "v.description"
	if q.NoDescription {
		desc = "''"
	}
	// One connection with a larger page cache (exportCacheKiB; with the
	// default 2 MB the random video lookups re-read pages), and one
	// prepared statement for every capture.
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("cannot export: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA cache_size = -%d", exportCacheKiB)); err != nil {
		return fmt.Errorf("cannot export: %w", err)
	}
	// Back to the default before the connection returns to the pool.
	defer conn.ExecContext(context.WithoutCancel(ctx), "PRAGMA cache_size = -2000") //nolint:errcheck
	stmt, err := conn.PrepareContext(ctx, `
SELECT e.rank, v.id, v.title, `+desc+`, v.channel_id, v.channel_title, v.category_id, v.tags,
       v.published_at, v.duration, v.thumbnail_url, e.view_count, e.like_count, e.comment_count
FROM entries e JOIN videos v ON v.rowid = e.video
WHERE e.capture_id = ? ORDER BY e.rank`)
	if err != nil {
		return fmt.Errorf("cannot export: %w", err)
	}
	defer stmt.Close()
	var row ExportRow
	for _, c := range caps {
		row.CaptureID, row.RunID, row.Region, row.CapturedAt, row.Complete = c.ID, c.RunID, c.Region, c.CapturedAt, c.Complete
		if err := s.exportCapture(ctx, stmt, &row, fn); err != nil {
			return err
		}
	}
	return nil
}

// exportCapture streams the entries of row.CaptureID.
func (s *Store) exportCapture(ctx context.Context, stmt *sql.Stmt, row *ExportRow, fn func(*ExportRow) error) error {
	rows, err := stmt.QueryContext(ctx, row.CaptureID)
	if err != nil {
		return fmt.Errorf("cannot export capture %d: %w", row.CaptureID, err)
	}
	defer rows.Close()
	var pub, dur sql.NullString
	lastPub := ""
	for rows.Next() {
		if err := rows.Scan(&row.Rank, &row.VideoID, &row.Title, &row.Description, &row.ChannelID, &row.ChannelTitle,
			&row.CategoryID, &row.Tags, &pub, &dur, &row.ThumbnailURL, &row.Views, &row.Likes, &row.Comments); err != nil {
			return fmt.Errorf("cannot export capture %d: %w", row.CaptureID, err)
		}
		if pub.String != lastPub || !pub.Valid {
			row.PublishedAt, lastPub = parseTime(pub), pub.String
		}
		row.Duration = dur.String
		if err := fn(row); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("cannot export capture %d: %w", row.CaptureID, err)
	}
	return nil
}

// exportCaptures lists the captures q selects, in export order.
func (s *Store) exportCaptures(ctx context.Context, q ExportQuery) ([]Capture, error) {
	where := []string{"kind = 'chart'"}
	var args []any
	if len(q.Regions) > 0 {
		where = append(where, "region IN ("+strings.TrimSuffix(strings.Repeat("?,", len(q.Regions)), ",")+")")
		for _, r := range q.Regions {
			args = append(args, r)
		}
	}
	if !q.Since.IsZero() {
		where = append(where, "captured_at >= ?")
		args = append(args, fmtTime(q.Since))
	}
	if !q.Until.IsZero() {
		where = append(where, "captured_at <= ?")
		args = append(args, fmtTime(q.Until))
	}
	query := `SELECT id, run_id, region, kind, query, captured_at, complete FROM captures WHERE ` + strings.Join(where, " AND ")
	if q.EveryDay {
		// The last complete capture of each region and UTC day.
		query = `SELECT id, run_id, region, kind, query, captured_at, complete FROM (
    SELECT *, row_number() OVER (PARTITION BY region, substr(captured_at, 1, 10) ORDER BY captured_at DESC, id DESC) AS n
    FROM captures WHERE complete = 1 AND ` + strings.Join(where, " AND ") + `
) WHERE n = 1`
	}
	rows, err := s.db.QueryContext(ctx, query+` ORDER BY captured_at, id`, args...)
	if err != nil {
		return nil, fmt.Errorf("cannot list captures to export: %w", err)
	}
	defer rows.Close()
	var out []Capture
	for rows.Next() {
		var (
			c  Capture
			ts sql.NullString
		)
		if err := rows.Scan(&c.ID, &c.RunID, &c.Region, &c.Kind, &c.Query, &ts, &c.Complete); err != nil {
			return nil, fmt.Errorf("cannot list captures to export: %w", err)
		}
		c.CapturedAt = parseTime(ts)
		out = append(out, c)
	}
	return out, rows.Err()
}
