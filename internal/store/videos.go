package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/trendfetch/trendfetch/internal/exitcode"
)

// ErrNotFound is returned (wrapped) when a requested row does not exist.
var ErrNotFound = exitcode.New(exitcode.NotFound, "not found")

// Video is one YouTube video as stored (videos.list snippet, contentDetails,
// statistics), upserted by ID: the latest capture's text and statistics win.
type Video struct {
	// ID is the YouTube video id; required.
	ID           string
	Title        string
	Description  string
	ChannelID    string
	ChannelTitle string
	CategoryID   string
	// Tags are stored as given (any text: see joinTags).
	Tags []string
	// PublishedAt is the zero time when unknown.
	PublishedAt time.Time
	// Duration is ISO 8601, e.g. "PT4M13S"; "" when unknown.
	Duration string
	// Views, Likes and Comments are nil when the API omitted the statistic
	// (e.g. likes hidden, comments disabled).
	Views, Likes, Comments *int64
	ThumbnailURL           string
}

// ChartEntry is one position of a stored chart or list of search hits.
type ChartEntry struct {
	// Rank is 1-based.
	Rank    int
	VideoID string
	Title   string
}

// Capture kinds (captures.kind): a videos.list chart=mostPopular, the
// search.list hits of one query (Snapshot.Query), a chart narrowed by
// videoCategoryId (Snapshot.Query is the category id); rank is the position.
const (
	KindChart    = "chart"
	KindSearch   = "search"
	KindCategory = "category"
)

// Tags are stored as the API gave them (exports reproduce them), joined
// with '\n', a backslash in a tag written `\\` and a newline `\n` (migration
// 0013). joinTags encodes, splitTags decodes.
var (
	tagEscaper   = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	tagUnescaper = strings.NewReplacer(`\\`, `\`, `\n`, "\n")
)

// noNUL is text without U+0000, which PostgreSQL's text cannot hold:
// dropped on both engines, so that they store the same text.
func noNUL(s string) string { return strings.ReplaceAll(s, "\x00", "") }

func joinTags(tags []string) string {
	esc := make([]string, len(tags))
	for i, t := range tags {
		esc[i] = tagEscaper.Replace(t)
	}
	return strings.Join(esc, "\n")
}

func splitTags(s string) []string {
	if s == "" {
		return nil
	}
	tags := strings.Split(s, "\n")
	for i, t := range tags {
		if strings.IndexByte(t, '\\') >= 0 {
			tags[i] = tagUnescaper.Replace(t)
		}
	}
	return tags
}

// upsertVideosSQL upserts the text of n videos, keeping the rowid (the FTS
// index stays valid) and rewriting only changed text no newer capture wrote
// (excluded.first_seen_at is the capture time; an older capture refers to
// the newer version). One statement, as FTS5 flushes an index segment per
// statement savepoint: a page is one segment.
func upsertVideosSQL(n int) string {
	return `INSERT INTO videos (
    id, title, description, channel_id, channel_title, category_id, tags,
    published_at, duration, thumbnail_url, first_seen_at
) VALUES ` + valueRows(n, 11) + `
ON CONFLICT (id) DO UPDATE SET
    title         = excluded.title,
    description   = excluded.description,
    channel_id    = excluded.channel_id,
    channel_title = excluded.channel_title,
    category_id   = excluded.category_id,
    tags          = excluded.tags,
    published_at  = coalesce(excluded.published_at, videos.published_at),
    duration      = coalesce(excluded.duration, videos.duration),
    thumbnail_url = excluded.thumbnail_url,
    text_version  = videos.text_version + CASE WHEN ` + textChanged + ` THEN 1 ELSE 0 END,
    text_since    = CASE WHEN ` + textChanged + ` THEN excluded.first_seen_at ELSE videos.text_since END
WHERE (` + textChanged + `
    OR videos.channel_id IS DISTINCT FROM excluded.channel_id
    OR coalesce(excluded.published_at, videos.published_at) IS DISTINCT FROM videos.published_at
    OR coalesce(excluded.duration, videos.duration) IS DISTINCT FROM videos.duration)
  AND excluded.first_seen_at >=
      coalesce((SELECT last_seen_at FROM video_stats WHERE video_rowid = videos.rowid), '')`
}

// textChanged is true when the captured text differs from the current
// version: it goes up, and trigger videos_texts_au keeps the old one.
const textChanged = `(videos.title IS DISTINCT FROM excluded.title
    OR videos.description IS DISTINCT FROM excluded.description
    OR videos.channel_title IS DISTINCT FROM excluded.channel_title
    OR videos.category_id IS DISTINCT FROM excluded.category_id
    OR videos.tags IS DISTINCT FROM excluded.tags
    OR videos.thumbnail_url IS DISTINCT FROM excluded.thumbnail_url)`

// upsertStatsSQL stores the statistics of n videos (id, views, likes,
// comments, captured at; the videos stored), never over newer ones. A video
// is found by a subquery: an index lookup whatever the table's statistics say
// (a join planned on statistics older than the table scanned every video).
// ("WHERE true": INSERT ... SELECT ... ON CONFLICT is ambiguous without it.)
func upsertStatsSQL(n int) string {
	return `INSERT INTO video_stats (video_rowid, view_count, like_count, comment_count, last_seen_at)
SELECT (SELECT rowid FROM videos WHERE id = x.column1), CAST(x.column2 AS BIGINT), CAST(x.column3 AS BIGINT),
       CAST(x.column4 AS BIGINT), x.column5
FROM (VALUES ` + valueRows(n, 5, 2, 3, 4) + `) AS x
WHERE true
ON CONFLICT (video_rowid) DO UPDATE SET
    view_count    = excluded.view_count,
    like_count    = excluded.like_count,
    comment_count = excluded.comment_count,
    last_seen_at  = excluded.last_seen_at
WHERE excluded.last_seen_at >= video_stats.last_seen_at`
}

// valueRows returns n rows of cols "?" placeholders for a multi-row VALUES
// list: "(?,?),(?,?)" for n=2, cols=2 (both at least 1). Columns ints
// (1-based) of the first row are cast: that types them on PostgreSQL (text otherwise).
func valueRows(n, cols int, ints ...int) string {
	first := slices.Repeat([]string{"?"}, cols)
	for _, c := range ints {
		first[c-1] = "CAST(? AS BIGINT)"
	}
	return "(" + strings.Join(first, ",") + ")" + strings.Repeat(",("+strings.Repeat("?,", cols-1)+"?)", n-1)
}

// stmt is one statement of a write and the rows it writes (txStmt keeps full pages'
// statements prepared); check, when set, judges the rows it changed.
type stmt struct {
	query string
	args  []any
	rows  int
	check func(changed int64) error
}

// rowStmts are build(n)'s multi-row statements over xs, maxRowsPerStatement at a time, row giving
// xs[i]'s parameters.
func rowStmts[T any](xs []T, build func(n int) string, row func(i int, x T) []any) []stmt {
	var out []stmt
	for off := 0; off < len(xs); off += maxRowsPerStatement {
		chunk := xs[off:min(len(xs), off+maxRowsPerStatement)]
		st := stmt{query: build(len(chunk)), rows: len(chunk)}
		for i, x := range chunk {
			st.args = append(st.args, row(off+i, x)...)
		}
		out = append(out, st)
	}
	return out
}

// execStmts runs stmts in tx, each prepared by txStmt and judged by its check; it returns the
// rows they changed.
func (s *Store) execStmts(ctx context.Context, tx *sql.Tx, stmts []stmt) (int64, error) {
	var changed int64
	for _, x := range stmts {
		st, err := s.txStmt(ctx, tx, x.query, x.rows)
		if err != nil {
			return changed, err
		}
		res, err := st.ExecContext(ctx, x.args...)
		st.Close()
		if err != nil {
			return changed, err
		}
		n, _ := res.RowsAffected()
		if x.check != nil {
			if err := x.check(n); err != nil {
				return changed, err
			}
		}
		changed += n
	}
	return changed, nil
}

// maxRowsPerStatement keeps multi-row statements well under SQLite's 32766
// bound parameters.
const maxRowsPerStatement = 500

// videoStmts store the text and statistics of vs, captured at ts, two
// statements per maxRowsPerStatement videos, once per id (the last given
// wins) and in id order: PostgreSQL's ON CONFLICT cannot update a row twice
// in one statement, and hosts locking rows in one order never deadlock.
func videoStmts(vs []Video, ts string) []stmt {
	order := lastByID(vs, videoID)
	return append(rowStmts(order, upsertVideosSQL, func(_ int, v *Video) []any {
		return []any{v.ID, noNUL(v.Title), noNUL(v.Description), v.ChannelID, noNUL(v.ChannelTitle), noNUL(v.CategoryID),
			noNUL(joinTags(v.Tags)), nullTime(v.PublishedAt), sql.Null[string]{V: v.Duration, Valid: v.Duration != ""},
			noNUL(v.ThumbnailURL), ts}
	}), rowStmts(order, upsertStatsSQL, func(_ int, v *Video) []any {
		return []any{v.ID, nullInt(v.Views), nullInt(v.Likes), nullInt(v.Comments), ts}
	})...)
}

// lastByID returns pointers to xs in id order, only the last of each id.
func lastByID[T any](xs []T, id func(*T) string) []*T {
	order := make([]*T, len(xs))
	for i := range xs {
		order[i] = &xs[i]
	}
	slices.SortStableFunc(order, func(a, b *T) int { return strings.Compare(id(a), id(b)) })
	uniq := order[:0]
	for i, x := range order {
		if i+1 == len(order) || id(order[i+1]) != id(x) {
			uniq = append(uniq, x)
		}
	}
	return uniq
}

func videoID(v *Video) string { return v.ID }

// Snapshot is one page of a capture, stored by SaveSnapshot.
type Snapshot struct {
	// RunID is the run that fetched the page (StartRun).
	RunID int64
	// Region is the regionCode, e.g. "US".
	Region string
	// Kind is KindChart ("" means KindChart), KindCategory or KindSearch.
	Kind string
	// Query is "" for a chart, the videoCategoryId of KindCategory, the
	// search.list q of KindSearch.
	Query string
	// FirstRank is the 1-based rank of Videos[0]: page 2 of 50 starts at 51.
	FirstRank int
	// Videos are the page's videos in rank order.
	Videos []Video
	// At is the capture time (first/last seen, captured_at); zero means now.
	At time.Time
}

// SaveSnapshot stores one page of a capture in one transaction: the videos,
// the capture (created by its first page, even empty, at p.At; partial until
// CompleteCapture), an entry per video with its statistics, the run's counts.
// Errors: a bad kind, query, rank or video id before writing; an unknown run
// wraps ErrNotFound; a rank stored twice fails and stores nothing.
func (s *Store) SaveSnapshot(ctx context.Context, p Snapshot) error {
	if p.Kind == "" {
		p.Kind = KindChart
	}
	if err := p.check(); err != nil {
		return err
	}
	if p.At.IsZero() {
		p.At = time.Now()
	}
	if err := s.d.savePage(ctx, s, p.stmts(s.d)); err != nil {
		if p.Kind == KindSearch {
			return fmt.Errorf("cannot save search hits (run %d, %s, query %q, rank %d): %w", p.RunID, p.Region, p.Query, p.FirstRank, err)
		}
		return fmt.Errorf("cannot save page (run %d, %s, rank %d): %w", p.RunID, p.Region, p.FirstRank, err)
	}
	return nil
}

// stmts are the statements that store p on d's engine. The capture is found by its natural key
// (entryArgs), which also finds the one a retried or concurrent write made; a run not found
// stores no capture (foreign key), so nothing.
func (p Snapshot) stmts(d *dialect) []stmt {
	ts := fmtTime(p.At)
	stmts := []stmt{{query: `UPDATE runs SET pages = pages + 1, videos = videos + ? WHERE id = ?`,
		args: []any{len(p.Videos), p.RunID}, check: func(n int64) error {
			if n != 1 {
				return fmt.Errorf("run %d: %w", p.RunID, ErrNotFound)
			}
			return nil
		}}, {query: `
INSERT INTO captures (run_id, region, kind, query, captured_at) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (run_id, region, kind, query) DO NOTHING`, args: []any{p.RunID, p.Region, p.Kind, p.Query, ts}}}
	if len(p.Videos) == 0 {
		return stmts
	}
	return append(append(stmts, videoStmts(p.Videos, ts)...), d.entries(p)...)
}

// entryArgs appends p's capture key (run id, region, kind, query) to the parameters of each of
// stmts, which find the capture by it.
func (p Snapshot) entryArgs(stmts []stmt) []stmt {
	for i := range stmts {
		stmts[i].args = append(stmts[i].args, p.RunID, p.Region, p.Kind, p.Query)
	}
	return stmts
}

// check refuses a page SaveSnapshot cannot store: a bad kind, query, rank,
// region or video id.
func (p Snapshot) check() error {
	switch {
	case p.Kind != KindChart && p.Kind != KindSearch && p.Kind != KindCategory:
		return fmt.Errorf("cannot save page: unknown snapshot kind %q", p.Kind)
	case p.Kind == KindChart && p.Query != "":
		return fmt.Errorf("cannot save page: a chart has no query (got %q)", p.Query)
	case p.Kind != KindChart && p.Query == "":
		return fmt.Errorf("cannot save page: a %s snapshot needs its query", p.Kind)
	case p.FirstRank < 1:
		return fmt.Errorf("cannot save page: first rank %d < 1", p.FirstRank)
	case p.Region == "":
		return errors.New("cannot save page: empty region")
	}
	if i := slices.IndexFunc(p.Videos, func(v Video) bool { return v.ID == "" }); i >= 0 {
		return fmt.Errorf("cannot save page: video at rank %d has no id", p.FirstRank+i)
	}
	return nil
}

// Chart is Entries of runID's chart of region.
func (s *Store) Chart(ctx context.Context, runID int64, region string) ([]ChartEntry, error) {
	return s.Entries(ctx, runID, region, KindChart, "")
}

// Entries returns the entries of the capture (runID, region, kind, query)
// in rank order, with current titles; empty (not an error) when none.
func (s *Store) Entries(ctx context.Context, runID int64, region, kind, query string) ([]ChartEntry, error) {
	var out []ChartEntry
	err := each(ctx, s.db, `
SELECT e.rank, v.id, v.title
FROM captures c
JOIN entries e ON e.capture_id = c.id
JOIN videos v ON v.rowid = e.video
WHERE c.run_id = ? AND c.region = ? AND c.kind = ? AND c.query = ?
ORDER BY e.rank`, []any{runID, region, kind, query}, func(rows *sql.Rows) error {
		var e ChartEntry
		err := rows.Scan(&e.Rank, &e.VideoID, &e.Title)
		out = append(out, e)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("cannot read %s capture: %w", kind, err)
	}
	return out, nil
}

// StoredVideo is a Video with the store's bookkeeping.
type StoredVideo struct {
	Video
	// FirstSeen and LastSeen are the first and latest capture times.
	FirstSeen, LastSeen time.Time
}

// Video returns the stored video with the given id, or an error wrapping
// ErrNotFound.
func (s *Store) Video(ctx context.Context, id string) (StoredVideo, error) {
	var (
		v                     StoredVideo
		tags                  string
		pub, dur, first, last sql.NullString
		views, likes, comms   sql.NullInt64
	)
	err := s.db.QueryRowContext(ctx, `
SELECT v.id, v.title, v.description, v.channel_id, v.channel_title, v.category_id, v.tags,
       v.published_at, v.duration, s.view_count, s.like_count, s.comment_count,
       v.thumbnail_url, v.first_seen_at, s.last_seen_at
FROM videos v LEFT JOIN video_stats s ON s.video_rowid = v.rowid
WHERE v.id = ?`, id).Scan(
		&v.ID, &v.Title, &v.Description, &v.ChannelID, &v.ChannelTitle, &v.CategoryID, &tags,
		&pub, &dur, &views, &likes, &comms, &v.ThumbnailURL, &first, &last)
	if errors.Is(err, sql.ErrNoRows) {
		return StoredVideo{}, fmt.Errorf("video %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return StoredVideo{}, fmt.Errorf("cannot read video %s: %w", id, err)
	}
	v.Tags = splitTags(tags)
	v.PublishedAt = parseTime(pub)
	v.Duration = dur.String
	v.Views, v.Likes, v.Comments = intPtr(views), intPtr(likes), intPtr(comms)
	v.FirstSeen, v.LastSeen = parseTime(first), parseTime(last)
	return v, nil
}

// CountVideos returns the number of distinct videos stored.
func (s *Store) CountVideos(ctx context.Context) (int64, error) { return s.count(ctx, "videos") }

// CountChannels returns the number of stored channels.
func (s *Store) CountChannels(ctx context.Context) (int64, error) { return s.count(ctx, "channels") }

// count returns the number of rows of table.
func (s *Store) count(ctx context.Context, table string) (n int64, err error) {
	if err = s.db.QueryRowContext(ctx, `SELECT count(*) FROM `+table).Scan(&n); err != nil {
		return 0, fmt.Errorf("cannot count %s: %w", table, err)
	}
	return n, nil
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
                WHERE `+s.d.onVideo("f.video")+` AND e.view_count IS NOT NULL), '') < ?4
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
		stored, err = s.execStmts(ctx, tx, rowStmts(samples, s.insertSamplesSQL, func(_ int, x Sample) []any {
			return []any{x.VideoID, ts, nullInt(x.Views), nullInt(x.Likes), nullInt(x.Comments)}
		}))
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
	return `INSERT INTO stats_samples (video, sampled_at, view_count, like_count, comment_count)
SELECT v.rowid, x.column2, x.column3, x.column4, x.column5
FROM (VALUES ` + valueRows(n, 5, 3, 4, 5) + `) AS x JOIN videos v ON v.id = x.column1
WHERE true` + s.d.sampleLock + `
ON CONFLICT (video, sampled_at) DO NOTHING`
}
