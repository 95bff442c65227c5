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
	// GroupBy streams the captures grouped by these keys in turn:
	// "region" (by code) or "date" (UTC day); each group's captures in
	// capture order. Empty is all captures in capture order. A writer of
	// one file per group then finishes each before starting the next, and
	// a Parquet row group holds one region's charts.
	GroupBy []string
}

// ExportRow is one entry of an exported capture. Export reuses one
// ExportRow for every row: copy what must outlive the callback.
type ExportRow struct {
	CaptureID int64
	RunID     int64
	// VideoKey identifies a video's text version within one export (!= 0):
	// rows with the same VideoKey have the same video and text, so a writer
	// may reuse what it rendered (at most ExportVideoCache keys at a time).
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
// (captured_at, then id; grouped first by q.GroupBy) and rank order
// within a capture, each with the video text of its capture (the text
// version the entry refers to) and the statistics of that moment.
//
// It reads ONE snapshot: everything is read in one read transaction, so a
// prune or run writing meanwhile changes nothing it sees (WAL keeps the
// snapshot's pages until it ends). Memory stays constant: captures are
// streamed, and one capture's entries (a few hundred) are read at a time.
// fn's error stops the export and is returned as is; so is ctx's.
func (s *Store) Export(ctx context.Context, q ExportQuery, fn func(*ExportRow) error) error {
	desc := "CASE WHEN e.text = v.text_version THEN v.description ELSE t.description END"
	if q.NoDescription {
		desc = "''"
	}
	// One connection with a larger page cache (exportCacheKiB; with the
	// default 2 MB the random video lookups re-read pages).
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("cannot export: %w", err)
	}
	defer conn.Close()
	if !s.pg {
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
	}
	// ReadOnly: a deferred BEGIN (the driver's _txlock=immediate would
	// take the write lock); the snapshot starts at the first read.
	// PostgreSQL: REPEATABLE READ is one snapshot for the whole export.
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true, Isolation: s.snapshotLevel()})
	if err != nil {
		return fmt.Errorf("cannot export: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // read only
	// A capture's entries are read alone (six integers a row); the texts
	// not in the cache are then read by rank, exportTextBatch at a time
	// (one round trip per batch on PostgreSQL, not one per video).
	entries, err := tx.PrepareContext(ctx, `
SELECT rank, video, text, view_count, like_count, comment_count
FROM entries WHERE capture_id = ? ORDER BY rank`)
	if err != nil {
		return fmt.Errorf("cannot export: %w", err)
	}
	defer entries.Close()
	// The current version is in videos, older ones in video_texts; a
	// version whose text was removed (store.policy) reads as empty text.
	ranks := make([]string, exportTextBatch)
	for i := range ranks {
		ranks[i] = fmt.Sprintf("?%d", i+2)
	}
	texts, err := tx.PrepareContext(ctx, `
SELECT e.video, e.text, v.id,
       coalesce(CASE WHEN e.text = v.text_version THEN v.title ELSE t.title END, ''),
       coalesce(`+desc+`, ''),
       v.channel_id,
       coalesce(CASE WHEN e.text = v.text_version THEN v.channel_title ELSE t.channel_title END, ''),
       coalesce(CASE WHEN e.text = v.text_version THEN v.category_id ELSE t.category_id END, ''),
       coalesce(CASE WHEN e.text = v.text_version THEN v.tags ELSE t.tags END, ''),
       v.published_at, v.duration,
       coalesce(CASE WHEN e.text = v.text_version THEN v.thumbnail_url ELSE t.thumbnail_url END, '')
FROM entries e JOIN videos v ON v.rowid = e.video
LEFT JOIN video_texts t ON t.video = e.video AND t.version = e.text
WHERE e.capture_id = ?1 AND e.rank IN (`+strings.Join(ranks, ", ")+`)`)
	if err != nil {
		return fmt.Errorf("cannot export: %w", err)
	}
	defer texts.Close()
	caps, err := s.exportCaptures(ctx, tx, q)
	if err != nil {
		return err
	}
	defer caps.close()
	x := exporter{entries: entries, texts: texts, cache: make(map[textKey]*exportVideo, ExportVideoCache),
		read: make(map[textKey]*exportVideo, exportTextBatch), fn: fn}
	for {
		batch, err := caps.next(ctx)
		if err != nil {
			return fmt.Errorf("cannot list captures to export: %w", err)
		}
		if len(batch) == 0 {
			return nil
		}
		for _, c := range batch {
			r := &x.row
			r.CaptureID, r.RunID, r.Region, r.CapturedAt, r.Complete = c.id, c.run, c.region, c.at, c.complete
			if err := x.capture(ctx); err != nil {
				return err
			}
		}
	}
}

// exportCapture is one captures row an export writes.
type exportCapture struct {
	id, run  int64
	region   string
	at       time.Time
	complete bool
}

// captureList hands out the captures of an export in batches: from one
// open query on SQLite, from a cursor on PostgreSQL (where a connection
// runs one query at a time, and the export also reads entries and texts).
type captureList struct {
	tx   *sql.Tx
	rows *sql.Rows // SQLite
}

// exportBatch is the most captures a batch holds.
const exportBatch = 256

func (l *captureList) next(ctx context.Context) ([]exportCapture, error) {
	rows := l.rows
	if rows == nil {
		var err error
		if rows, err = l.tx.QueryContext(ctx, fmt.Sprintf("FETCH %d FROM export_captures", exportBatch)); err != nil {
			return nil, err
		}
		defer rows.Close()
	}
	var out []exportCapture
	for len(out) < exportBatch && rows.Next() {
		var c exportCapture
		var ts sql.NullString
		if err := rows.Scan(&c.id, &c.run, &c.region, &ts, &c.complete); err != nil {
			return nil, err
		}
		c.at = parseTime(ts)
		out = append(out, c)
	}
	return out, rows.Err()
}

func (l *captureList) close() {
	if l.rows != nil {
		l.rows.Close()
	}
}

// exportTextBatch is the most texts one read of a capture's texts asks for.
const exportTextBatch = 128

// exporter is the state of one Export: its statements, the text cache and
// the row handed to fn.
type exporter struct {
	entries, texts *sql.Stmt
	cache          map[textKey]*exportVideo
	read           map[textKey]*exportVideo // the last batch read, not yet all cached
	args           []any                    // the texts statement's arguments
	keys           int64                    // VideoKeys given out beyond exportKey's range
	fn             func(*ExportRow) error
	row            ExportRow
	rows           []exportEntry // the current capture's entries
}

// textKey is one text version of one video.
type textKey struct{ video, version int64 }

// exportKey is k as an ExportRow.VideoKey: the same for every read of k, so
// a writer's cache outlives the exporter's (video rowid and version packed,
// 0 when they do not fit).
func (k textKey) exportKey() int64 {
	if k.version < 0 || k.version >= 1<<16 || k.video <= 0 || k.video >= 1<<46 {
		return 0
	}
	return k.video<<16 | k.version
}

// exportEntry is one entries row: rank, text version and statistics.
type exportEntry struct {
	rank                   int
	text                   textKey
	views, likes, comments sql.NullInt64
}

// exportVideo is the text of one video version as ExportRow carries it,
// with the VideoKey it was given.
type exportVideo struct {
	key                                                                                       int64
	id, title, description, channelID, channelTitle, categoryID, tags, duration, thumbnailURL string
	publishedAt                                                                               time.Time
}

// capture streams the entries of x.row.CaptureID. It reads the capture's
// entries (at most a chart's few hundred) before looking texts up, so only
// one statement is stepping at a time besides the captures list.
func (x *exporter) capture(ctx context.Context) error {
	id := x.row.CaptureID
	rows, err := x.entries.QueryContext(ctx, id)
	if err != nil {
		return fmt.Errorf("cannot export capture %d: %w", id, err)
	}
	x.rows = x.rows[:0]
	for rows.Next() {
		var e exportEntry
		if err := rows.Scan(&e.rank, &e.text.video, &e.text.version, &e.views, &e.likes, &e.comments); err != nil {
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
	for i, e := range x.rows {
		v, err := x.videoText(ctx, i)
		if err != nil {
			return fmt.Errorf("cannot export capture %d: %w", id, err)
		}
		r.Rank, r.VideoKey = e.rank, v.key
		r.VideoID, r.Title, r.Description, r.ChannelID, r.ChannelTitle = v.id, v.title, v.description, v.channelID, v.channelTitle
		r.CategoryID, r.Tags, r.PublishedAt, r.Duration, r.ThumbnailURL = v.categoryID, v.tags, v.publishedAt, v.duration, v.thumbnailURL
		r.Views, r.Likes, r.Comments = e.views, e.likes, e.comments
		if err := x.fn(r); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// videoText returns the text of entry x.rows[i], from the cache or read
// (and cached; a full cache is emptied first). A read asks for the texts
// of the next entries missing from the cache too, up to exportTextBatch.
func (x *exporter) videoText(ctx context.Context, i int) (*exportVideo, error) {
	k := x.rows[i].text
	if v, ok := x.cache[k]; ok {
		return v, nil
	}
	v, ok := x.read[k]
	if !ok {
		if err := x.readTexts(ctx, i); err != nil {
			return nil, err
		}
		if v, ok = x.read[k]; !ok {
			return nil, fmt.Errorf("video %d: %w", k.video, sql.ErrNoRows)
		}
	}
	if len(x.cache) >= ExportVideoCache {
		clear(x.cache)
	}
	x.cache[k] = v
	return v, nil
}

// readTexts replaces x.read with the texts of x.rows[i] and of the next
// entries missing from the cache, exportTextBatch at most, each under a new
// VideoKey.
func (x *exporter) readTexts(ctx context.Context, i int) error {
	clear(x.read)
	x.args = append(x.args[:0], x.row.CaptureID)
	for _, e := range x.rows[i:] {
		if len(x.args) > exportTextBatch {
			break
		}
		if _, ok := x.cache[e.text]; !ok {
			x.args = append(x.args, e.rank)
		}
	}
	for len(x.args) <= exportTextBatch {
		x.args = append(x.args, 0) // no rank
	}
	rows, err := x.texts.QueryContext(ctx, x.args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			k        textKey
			v        exportVideo
			pub, dur sql.NullString
		)
		if err := rows.Scan(&k.video, &k.version, &v.id, &v.title, &v.description, &v.channelID, &v.channelTitle,
			&v.categoryID, &v.tags, &pub, &dur, &v.thumbnailURL); err != nil {
			return err
		}
		if _, ok := x.read[k]; ok {
			continue // on the chart twice
		}
		v.publishedAt, v.duration = parseTime(pub), dur.String
		v.key = k.exportKey()
		if v.key == 0 {
			x.keys++ // beyond exportKey's range: a key of its own, never reused
			v.key = -x.keys
		}
		x.read[k] = &v
	}
	return rows.Err()
}

// exportWhere is the WHERE clause (and its arguments) of the chart
// captures q selects.
func exportWhere(q ExportQuery) (string, []any) {
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
	if q.EveryDay {
		where = append(where, "complete = 1")
	}
	return strings.Join(where, " AND "), args
}

// exportCaptures lists the captures q selects, in export order, in tx:
// id, run_id, region, captured_at, complete.
func (s *Store) exportCaptures(ctx context.Context, tx *sql.Tx, q ExportQuery) (*captureList, error) {
	where, args := exportWhere(q)
	query := `SELECT id, run_id, region, captured_at, complete FROM captures WHERE ` + where
	if q.EveryDay {
		// The last complete capture of each region and UTC day.
		query = `SELECT id, run_id, region, captured_at, complete FROM (
    SELECT *, row_number() OVER (PARTITION BY region, substr(captured_at, 1, 10) ORDER BY captured_at DESC, id DESC) AS n
    FROM captures WHERE ` + where + `
) AS c WHERE n = 1`
	}
	order := ` ORDER BY `
	for _, k := range q.GroupBy {
		switch k {
		case "region":
			order += "region, "
		case "date":
			order += "substr(captured_at, 1, 10), "
		default:
			return nil, fmt.Errorf("cannot list captures to export: unknown group %q (want region or date)", k)
		}
	}
	order += "captured_at, id"
	if s.pg {
		if _, err := tx.ExecContext(ctx, `DECLARE export_captures NO SCROLL CURSOR FOR `+query+order, args...); err != nil {
			return nil, fmt.Errorf("cannot list captures to export: %w", err)
		}
		return &captureList{tx: tx}, nil
	}
	rows, err := tx.QueryContext(ctx, query+order, args...)
	if err != nil {
		return nil, fmt.Errorf("cannot list captures to export: %w", err)
	}
	return &captureList{rows: rows}, nil
}

// ExportRegions returns the regions of the captures q selects, sorted:
// what an Export of q would write (Export reads its own snapshot; a run
// may add a region in between).
func (s *Store) ExportRegions(ctx context.Context, q ExportQuery) ([]string, error) {
	where, args := exportWhere(q)
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT region FROM captures WHERE `+where+` ORDER BY region`, args...)
	if err != nil {
		return nil, fmt.Errorf("cannot list regions to export: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			return nil, fmt.Errorf("cannot list regions to export: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
