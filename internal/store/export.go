package store

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// exportCacheKiB is scanConn's page cache: the hot part of the videos
// table, well under the 100 MB export budget.
const exportCacheKiB = 8 << 10

// ExportVideoCache bounds the video texts Export (and a writer) keeps for
// the next captures, ~6 MB; a full cache is emptied (captures are in time order).
const ExportVideoCache = 4096

// ExportQuery selects the chart captures (kind chart) Export streams.
type ExportQuery struct {
	Regions       []string  // only these (upper case); empty: all
	Since, Until  time.Time // bound captured_at (inclusive); zero: unbounded
	NoDescription bool      // ExportRow.Description left empty, not read
	// EveryDay keeps only the last complete capture of each region and UTC
	// day (the public datasets' rows); otherwise every capture, partial too.
	EveryDay bool
	// GroupBy streams the captures grouped by these keys in turn: "region"
	// (by code) or "date" (UTC day); within a group, in capture order.
	GroupBy []string
}

// ExportRow is one entry of an exported capture. Export reuses one
// ExportRow for every row: copy what must outlive the callback.
type ExportRow struct {
	CaptureID, RunID int64
	// VideoKey identifies a video's text version within one export (!= 0):
	// rows with the same VideoKey have the same video and text, so a writer
	// may reuse what it rendered (at most ExportVideoCache keys at a time).
	VideoKey    int64
	Region      string
	CapturedAt  time.Time // UTC
	Complete    bool
	Rank        int       // 1-based
	PublishedAt time.Time // zero when unknown
	// The video and its text as captured: Tags joined with '\n' as stored
	// ("" = none), Duration "" when unknown.
	VideoID, Title, Description, ChannelID, ChannelTitle, CategoryID, Tags, Duration, ThumbnailURL string
	// Views, Likes and Comments are the entry's statistics, Valid false when unknown.
	Views, Likes, Comments sql.NullInt64
}

// Export streams the chart entries selected by q to fn in capture order (captured_at, id; grouped
// first by q.GroupBy) and rank order, each with the text and statistics of its capture, from one
// snapshot in constant memory (docs/design.md §6). fn's error and ctx's are returned as is.
func (s *Store) Export(ctx context.Context, q ExportQuery, fn func(*ExportRow) error) error {
	tx, release, err := s.scanTx(ctx)
	if err != nil {
		return fmt.Errorf("cannot export: %w", err)
	}
	defer release()
	x := exporter{fn: fn, cache: make(map[textKey]*ExportRow, ExportVideoCache)}
	// Older text versions are in video_texts; one the storage policy removed reads as empty text.
	text := func(c string) string {
		return "coalesce(CASE WHEN e.text = v.text_version THEN v." + c + " ELSE t." + c + " END, '')"
	}
	desc := text("description")
	if q.NoDescription {
		desc = "''"
	}
	ranks := make([]string, exportTextBatch)
	for i := range ranks {
		ranks[i] = fmt.Sprintf("?%d", i+2)
	}
	// A capture's entries are read alone, then the texts not cached by rank, exportTextBatch at a
	// time (one round trip each on PostgreSQL). The statements close with tx.
	x.entries, err = tx.PrepareContext(ctx, `
SELECT rank, video, text, view_count, like_count, comment_count
FROM entries WHERE capture_id = ? ORDER BY rank`)
	if err == nil {
		x.texts, err = tx.PrepareContext(ctx, `
SELECT e.video, e.text, v.id, v.channel_id, v.published_at, v.duration, `+text("title")+`, `+desc+`,
       `+text("channel_title")+`, `+text("category_id")+`, `+text("tags")+`, `+text("thumbnail_url")+`
FROM entries e JOIN videos v ON v.rowid = e.video
LEFT JOIN video_texts t ON t.video = e.video AND t.version = e.text
WHERE e.capture_id = ?1 AND e.rank IN (`+strings.Join(ranks, ", ")+`)`)
	}
	if err != nil {
		return fmt.Errorf("cannot export: %w", err)
	}
	caps, err := s.exportCaptures(ctx, tx, q)
	if err != nil {
		return err
	}
	defer caps.close()
	for {
		batch, err := caps.next(ctx)
		if err != nil {
			return fmt.Errorf("cannot list captures to export: %w", err)
		}
		if len(batch) == 0 {
			return nil
		}
		for i := range batch {
			if err := x.capture(ctx, &batch[i]); err != nil {
				return err
			}
		}
	}
}

// scanTx returns a read transaction for reading the whole database once
// (the dialect's: one snapshot, bounded memory) and the func that ends it.
func (s *Store) scanTx(ctx context.Context) (*sql.Tx, func(), error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, nil, err
	}
	tx, restore, err := s.d.scanTx(ctx, conn)
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	return tx, func() {
		tx.Rollback() //nolint:errcheck // read only
		restore()
		conn.Close()
	}, nil
}

// captureList hands out an export's captures, exportBatch at a time: from
// a query on SQLite, a cursor on PostgreSQL (one query at a time there).
type captureList struct {
	tx   *sql.Tx
	rows *sql.Rows // SQLite
}

// next returns the next captures, only their CaptureID, RunID, Region,
// CapturedAt and Complete set; none at the end.
func (l *captureList) next(ctx context.Context) ([]ExportRow, error) {
	rows := l.rows
	if rows == nil {
		var err error
		if rows, err = l.tx.QueryContext(ctx, fmt.Sprintf("FETCH %d FROM export_captures", exportBatch)); err != nil {
			return nil, err
		}
		defer rows.Close()
	}
	var out []ExportRow
	for len(out) < exportBatch && rows.Next() {
		var c ExportRow
		var ts sql.NullString
		if err := rows.Scan(&c.CaptureID, &c.RunID, &c.Region, &ts, &c.Complete); err != nil {
			return nil, err
		}
		c.CapturedAt = parseTime(ts)
		out = append(out, c)
	}
	return out, rows.Err()
}

func (l *captureList) close() {
	if l.rows != nil {
		l.rows.Close()
	}
}

const (
	exportBatch     = 256 // captures a batch holds
	exportTextBatch = 128 // the most texts one read of a capture's texts asks for
)

// exporter is one Export's state; cache's rows have only VideoKey and text.
type exporter struct {
	entries, texts *sql.Stmt
	cache          map[textKey]*ExportRow
	args           []any // the texts statement's arguments
	keys           int64 // VideoKeys given out beyond exportKey's range
	fn             func(*ExportRow) error
	row            ExportRow
	rows           []exportEntry // the current capture's entries
}

// textKey is one text version of one video.
type textKey struct{ video, version int64 }

// exportKey is k as an ExportRow.VideoKey, the same for every read of k
// (rowid and version packed; 0 when they do not fit).
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

// capture streams the entries of c, read before their texts (one
// statement steps at a time besides the captures list).
func (x *exporter) capture(ctx context.Context, c *ExportRow) error {
	x.rows = x.rows[:0]
	rows, err := x.entries.QueryContext(ctx, c.CaptureID)
	if err == nil {
		for err == nil && rows.Next() {
			var e exportEntry
			err = rows.Scan(&e.rank, &e.text.video, &e.text.version, &e.views, &e.likes, &e.comments)
			x.rows = append(x.rows, e)
		}
		err = cmp.Or(err, rows.Close(), rows.Err())
	}
	if err != nil {
		return fmt.Errorf("cannot export capture %d: %w", c.CaptureID, err)
	}
	for i, e := range x.rows {
		v, ok := x.cache[e.text]
		if !ok {
			if err := x.readTexts(ctx, c.CaptureID, i); err != nil {
				return fmt.Errorf("cannot export capture %d: %w", c.CaptureID, err)
			}
			if v, ok = x.cache[e.text]; !ok {
				return fmt.Errorf("cannot export capture %d: video %d: %w", c.CaptureID, e.text.video, sql.ErrNoRows)
			}
		}
		r := &x.row
		*r = *v
		r.CaptureID, r.RunID, r.Region = c.CaptureID, c.RunID, c.Region
		r.CapturedAt, r.Complete = c.CapturedAt, c.Complete
		r.Rank, r.Views, r.Likes, r.Comments = e.rank, e.views, e.likes, e.comments
		if err := x.fn(r); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// readTexts caches the texts of x.rows[i] of capture id and of the next
// entries missing from the cache, exportTextBatch at most, each under a
// new VideoKey (emptying the cache first when they might not fit).
func (x *exporter) readTexts(ctx context.Context, id int64, i int) error {
	if len(x.cache) > ExportVideoCache-exportTextBatch {
		clear(x.cache)
	}
	x.args = append(x.args[:0], id)
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
			v        ExportRow
			pub, dur sql.NullString
		)
		if err := rows.Scan(&k.video, &k.version, &v.VideoID, &v.ChannelID, &pub, &dur, &v.Title, &v.Description,
			&v.ChannelTitle, &v.CategoryID, &v.Tags, &v.ThumbnailURL); err != nil {
			return err
		}
		if _, ok := x.cache[k]; ok {
			continue // on the chart twice
		}
		v.PublishedAt, v.Duration = parseTime(pub), dur.String
		if v.VideoKey = k.exportKey(); v.VideoKey == 0 {
			x.keys++ // beyond exportKey's range: a key of its own, never reused
			v.VideoKey = -x.keys
		}
		x.cache[k] = &v
	}
	return rows.Err()
}

// exportWhere is the WHERE clause (and its arguments) of the chart captures q selects.
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
		where, args = append(where, "captured_at >= ?"), append(args, fmtTime(q.Since))
	}
	if !q.Until.IsZero() {
		where, args = append(where, "captured_at <= ?"), append(args, fmtTime(q.Until))
	}
	if q.EveryDay {
		where = append(where, "complete = 1")
	}
	return strings.Join(where, " AND "), args
}

// exportCaptures lists the captures q selects in tx, in export order.
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
	query += ` ORDER BY `
	for _, k := range q.GroupBy {
		g, ok := map[string]string{"region": "region, ", "date": "substr(captured_at, 1, 10), "}[k]
		if !ok {
			return nil, fmt.Errorf("cannot list captures to export: unknown group %q (want region or date)", k)
		}
		query += g
	}
	query += "captured_at, id"
	l, err := s.d.captures(ctx, tx, query, args)
	if err != nil {
		return nil, fmt.Errorf("cannot list captures to export: %w", err)
	}
	return l, nil
}

// ExportRegions returns the regions of the captures q selects, sorted (as
// of now: Export reads its own snapshot).
func (s *Store) ExportRegions(ctx context.Context, q ExportQuery) ([]string, error) {
	where, args := exportWhere(q)
	rs, err := column[string](ctx, s.db, `SELECT DISTINCT region FROM captures WHERE `+where+` ORDER BY region`, args...)
	if err != nil {
		return nil, fmt.Errorf("cannot list regions to export: %w", err)
	}
	return rs, nil
}
