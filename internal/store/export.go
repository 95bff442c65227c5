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

// ExportVideoCache bounds the videos whose text Export keeps between rows
// (and a writer may keep rendered): a video stays on a chart for days, so
// consecutive captures share most of their videos and one read of its text
// serves all its rows. 4,096 videos of ~1.5 KB is ~6 MB; the cache is
// emptied when full (captures are read in time order, so it refills with
// the videos of the moment).
const ExportVideoCache = 4096

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
	// VideoKey identifies the video within one export (its rowid): rows
	// with the same VideoKey have the same video text, so a writer may
	// reuse what it rendered (at most ExportVideoCache keys at a time).
	VideoKey int64
	Region   string
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
	desc := "description"
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
	// No memory map (see ReadOnlyMmapBytes): an export reads the whole
	// database once, and mapped pages would count in its RSS.
	var mmap int64
	if err := conn.QueryRowContext(ctx, "PRAGMA mmap_size").Scan(&mmap); err != nil {
		return fmt.Errorf("cannot export: %w", err)
	}
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA cache_size = -%d", exportCacheKiB)); err != nil {
		return fmt.Errorf("cannot export: %w", err)
	}
	if _, err := conn.ExecContext(ctx, "PRAGMA mmap_size = 0"); err != nil {
		return fmt.Errorf("cannot export: %w", err)
	}
	// Back to the defaults before the connection returns to the pool.
	defer func() {
		bg := context.WithoutCancel(ctx)
		conn.ExecContext(bg, "PRAGMA cache_size = -2000")                //nolint:errcheck
		conn.ExecContext(bg, fmt.Sprintf("PRAGMA mmap_size = %d", mmap)) //nolint:errcheck
	}()
	// A capture's entries are read alone (five integers a row); the text
	// of each video is read once while it stays in the cache.
	entries, err := conn.PrepareContext(ctx, `
SELECT rank, video, view_count, like_count, comment_count
FROM entries WHERE capture_id = ? ORDER BY rank`)
	if err != nil {
		return fmt.Errorf("cannot export: %w", err)
	}
	defer entries.Close()
	video, err := conn.PrepareContext(ctx, `
SELECT id, title, `+desc+`, channel_id, channel_title, category_id, tags, published_at, duration, thumbnail_url
FROM videos WHERE rowid = ?`)
	if err != nil {
		return fmt.Errorf("cannot export: %w", err)
	}
	defer video.Close()
	x := exporter{entries: entries, video: video, cache: make(map[int64]*exportVideo, ExportVideoCache), fn: fn}
	for _, c := range caps {
		x.row.CaptureID, x.row.RunID, x.row.Region, x.row.CapturedAt, x.row.Complete = c.ID, c.RunID, c.Region, c.CapturedAt, c.Complete
		if err := x.capture(ctx); err != nil {
			return err
		}
	}
	return nil
}

// exporter is the state of one Export: its statements, the video cache and
// the row handed to fn.
type exporter struct {
	entries, video *sql.Stmt
	cache          map[int64]*exportVideo
	fn             func(*ExportRow) error
	row            ExportRow
	rows           []exportEntry // the current capture's entries
}

// exportEntry is one entries row: rank, video rowid and statistics.
type exportEntry struct {
	rank                   int
	key                    int64
	views, likes, comments sql.NullInt64
}

// exportVideo is the text of one video as ExportRow carries it.
type exportVideo struct {
	id, title, description, channelID, channelTitle, categoryID, tags, duration, thumbnailURL string
	publishedAt                                                                               time.Time
}

// capture streams the entries of x.row.CaptureID. It reads the capture's
// entries (at most a chart's few hundred) before looking videos up, so only
// one statement is stepping at a time.
func (x *exporter) capture(ctx context.Context) error {
	id := x.row.CaptureID
	rows, err := x.entries.QueryContext(ctx, id)
	if err != nil {
		return fmt.Errorf("cannot export capture %d: %w", id, err)
	}
	x.rows = x.rows[:0]
	for rows.Next() {
		var e exportEntry
		if err := rows.Scan(&e.rank, &e.key, &e.views, &e.likes, &e.comments); err != nil {
			rows.Close()
			return fmt.Errorf("cannot export capture %d: %w", id, err)
		}
		x.rows = append(x.rows, e)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("cannot export capture %d: %w", id, err)
	}
	r := &x.row
	for _, e := range x.rows {
		v, err := x.videoText(ctx, e.key)
		if err != nil {
			return fmt.Errorf("cannot export capture %d: %w", id, err)
		}
		r.Rank, r.VideoKey = e.rank, e.key
		r.VideoID, r.Title, r.Description, r.ChannelID, r.ChannelTitle = v.id, v.title, v.description, v.channelID, v.channelTitle
		r.CategoryID, r.Tags, r.PublishedAt, r.Duration, r.ThumbnailURL = v.categoryID, v.tags, v.publishedAt, v.duration, v.thumbnailURL
		r.Views, r.Likes, r.Comments = e.views, e.likes, e.comments
		if err := x.fn(r); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// videoText returns the text of the video with rowid key, from the cache
// or read (and cached; a full cache is emptied first).
func (x *exporter) videoText(ctx context.Context, key int64) (*exportVideo, error) {
	if v, ok := x.cache[key]; ok {
		return v, nil
	}
	var (
		v        exportVideo
		pub, dur sql.NullString
	)
	if err := x.video.QueryRowContext(ctx, key).Scan(&v.id, &v.title, &v.description, &v.channelID, &v.channelTitle,
		&v.categoryID, &v.tags, &pub, &dur, &v.thumbnailURL); err != nil {
		return nil, fmt.Errorf("video %d: %w", key, err)
	}
	v.publishedAt, v.duration = parseTime(pub), dur.String
	if len(x.cache) >= ExportVideoCache {
		clear(x.cache)
	}
	x.cache[key] = &v
	return &v, nil
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
