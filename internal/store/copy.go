package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Copied is what CopyFrom wrote into one table: Rows inserted, or updated
// because the source's row was newer (a run finished, a text changed...).
type Copied struct {
	Table string `json:"table"`
	Rows  int64  `json:"rows"`
}

// copyBatchBytes bounds the JSON of one batch (one transaction).
const copyBatchBytes = 1 << 20

// copyStep copies one source table as JSON objects of fields ("name" text,
// "name:bigint", "name:video" a video by its YouTube id, "name=expr" read
// from a SQLite expression) read from from (aliased t). Each statement of
// write takes the batch (see sql); counted[i] names the table its rows go
// to. Without write, rows are inserted, a row already there (key) updated
// where newer holds.
type copyStep struct {
	table, fields, from, key, newer string
	write, counted                  []string
}

// runID finds the destination run of the source run in b's fields with
// prefix p: the same id when kept (one index lookup), else by natural key.
func runID(p string) string {
	same := fmt.Sprintf(`r.region = b.%[1]sregion AND r.started_at = b.%[1]sstarted_at AND r.host = b.%[1]shost
AND r.pid IS NOT DISTINCT FROM b.%[1]spid AND r.credential = b.%[1]scredential`, p)
	return fmt.Sprintf(`coalesce((SELECT r.id FROM runs r WHERE r.id = b.%sid AND %s), (SELECT min(r.id) FROM runs r WHERE %s))`, p, same, same)
}

// copySteps is the copy's order: a row's references are copied before it.
var copySteps = []copyStep{
	{table: "channels", fields: "id title country subscriber_count:bigint video_count:bigint view_count:bigint fetched_at",
		from: "channels t", key: "id", newer: "channels.fetched_at < excluded.fetched_at"},
	{table: "categories", fields: "region id title assignable:bigint fetched_at", from: "categories t",
		key: "region, id", newer: "categories.fetched_at < excluded.fetched_at"},
	{table: "category_fetches", fields: "region fetched_at", from: "category_fetches t",
		key: "region", newer: "category_fetches.fetched_at < excluded.fetched_at"},
	{table: "store_meta", fields: "key value", from: "store_meta t", key: "key"},
	// A newer text version updates the video; the trigger keeps the old one.
	{table: "videos", fields: `id title description channel_id channel_title category_id tags published_at duration
thumbnail_url first_seen_at text_version:bigint text_since text_refreshed_at`, from: "videos t ORDER BY t.rowid", key: "id",
		newer: "(videos.text_version, coalesce(videos.text_refreshed_at, '')) < (excluded.text_version, coalesce(excluded.text_refreshed_at, ''))"},
	{table: "video_stats", fields: "video_rowid:video view_count:bigint like_count:bigint comment_count:bigint last_seen_at",
		from: "video_stats t", key: "video_rowid", newer: "video_stats.last_seen_at < excluded.last_seen_at"},
	{table: "video_texts", fields: "video:video version:bigint title description channel_title category_id tags thumbnail_url since",
		from: "video_texts t ORDER BY t.rowid", key: "video, version"},
	{table: "stats_samples", fields: "video:video sampled_at view_count:bigint like_count:bigint comment_count:bigint",
		from: "stats_samples t", key: "video, sampled_at"},
	{table: "runs", fields: `id:bigint credential region started_at finished_at pages:bigint videos:bigint units unmetered:bigint
outcome reason retry_after_ms:bigint retry_at pid:bigint host calls shadow_denials`, from: "runs t ORDER BY t.id",
		counted: []string{"runs", "runs"}, write: []string{`
INSERT INTO runs (%[2]s) SELECT %[3]s FROM %[1]s WHERE ` + runID("") + ` IS NULL`, `
UPDATE runs r SET (finished_at, pages, videos, units, unmetered, outcome, reason, retry_after_ms, retry_at, calls,
    shadow_denials) = (b.finished_at, b.pages, b.videos, b.units, b.unmetered, b.outcome, b.reason, b.retry_after_ms,
    b.retry_at, b.calls, b.shadow_denials)
FROM %[1]s WHERE r.id = ` + runID("") + ` AND r.finished_at IS NULL AND b.outcome <> 'running'
    AND (r.outcome = 'running' OR b.finished_at IS NOT NULL)`}},
	// A capture travels with its entries (e) and its run's natural key (run_*). Its ranks not
	// stored yet become pages (runs of consecutive ranks, cut at each 50), counted by entry.
	{table: "captures", fields: `id:bigint region kind query captured_at complete:bigint e:jsonb=json(t.e) run_id:bigint=r.id
run_region=r.region run_started_at=r.started_at run_host=r.host run_pid:bigint=r.pid run_credential=r.credential`,
		from: `(SELECT c.*, (SELECT json_group_array(json_array(e.rank, v.id, e.view_count, e.like_count, e.comment_count, e.text))
FROM entries e JOIN videos v ON v.rowid = e.video WHERE e.capture_id = c.id) AS e FROM captures c) t
JOIN runs r ON r.id = t.run_id ORDER BY t.id`,
		counted: []string{"captures", "captures", "entries"}, write: []string{`
INSERT INTO captures (id, run_id, region, kind, query, captured_at, complete)
SELECT %[4]s, b.run, b.region, b.kind, b.query, b.captured_at, b.complete FROM %[1]s
WHERE NOT EXISTS (SELECT 1 FROM captures c WHERE ` + sameCapture + `)`, `
UPDATE captures c SET complete = 1 FROM %[1]s WHERE ` + sameCapture + ` AND c.complete = 0 AND b.complete = 1`, `
WITH pages AS (
INSERT INTO entry_pages (capture_id, first_rank, video, view_count, like_count, comment_count, text)
SELECT id, min(rank), array_agg(video ORDER BY rank), array_agg(view_count ORDER BY rank),
       array_agg(like_count ORDER BY rank), array_agg(comment_count ORDER BY rank), array_agg(text ORDER BY rank)
FROM (SELECT c.id, x.rank, (SELECT rowid FROM videos WHERE id = x.e->>1) AS video, (x.e->>2)::bigint AS view_count,
             (x.e->>3)::bigint AS like_count, (x.e->>4)::bigint AS comment_count, (x.e->>5)::bigint AS text,
             x.rank - row_number() OVER (PARTITION BY c.id ORDER BY x.rank) AS run
      FROM %[1]s JOIN captures c ON ` + sameCapture + `
      CROSS JOIN LATERAL (SELECT j.e, (j.e->>0)::bigint FROM jsonb_array_elements(b.e) AS j(e)) AS x(e, rank)
      WHERE NOT EXISTS (SELECT 1 FROM entry_pages p WHERE p.capture_id = c.id
                        AND x.rank BETWEEN p.first_rank AND p.first_rank + cardinality(p.video) - 1)) e
GROUP BY id, run, (rank - 1) / 50
ON CONFLICT (capture_id, first_rank) DO NOTHING
RETURNING video)
SELECT FROM pages, unnest(pages.video)`}},
}

// sameCapture matches captures c to b's capture by its natural key.
const sameCapture = `c.run_id = b.run AND c.region = b.region AND c.kind = b.kind AND c.query = b.query`

// sql returns the step's SQLite query (a JSON object a row) and PostgreSQL
// statements, given the batch (%[1]s), the fields' names (%[2]s), their
// values (%[3]s: b.name, a video's rowid, an id kept where free) and the
// kept id (%[4]s). An id is kept where free and above handed, the last id the destination's
// sequence had handed out when the step began: one at or below it may belong to a live host's
// transaction not yet committed.
func (c copyStep) sql(handed int64) (read string, write []string) {
	var names, sel, obj, rec []string
	keep := fmt.Sprintf(`CASE WHEN b.id <= %[2]d OR EXISTS (SELECT 1 FROM %[1]s WHERE id = b.id)
THEN nextval(pg_get_serial_sequence('%[1]s', 'id')) ELSE b.id END`, c.table, handed)
	for _, f := range strings.Fields(c.fields) {
		f, expr, ok := strings.Cut(f, "=")
		name, typ, _ := strings.Cut(f, ":")
		if !ok {
			expr = "t." + name
		}
		col := "b." + name
		switch {
		case typ == "":
			typ = "text"
		case typ == "video":
			typ, expr, col = "text", "(SELECT id FROM videos WHERE rowid = "+expr+")", "(SELECT rowid FROM videos WHERE id = b."+name+")"
		case f == "id:bigint":
			col = keep
		}
		names, sel = append(names, name), append(sel, col)
		obj, rec = append(obj, "'"+name+"', "+expr), append(rec, name+" "+typ)
	}
	read = "SELECT json_object(" + strings.Join(obj, ", ") + ") FROM " + c.from
	batch := "jsonb_to_recordset(?::jsonb) AS b(" + strings.Join(rec, ", ") + ")"
	if strings.Contains(c.fields, "run_id:") {
		batch = "(SELECT b.*, " + runID("run_") + " AS run FROM " + batch + ") b"
	}
	if c.write == nil {
		conflict := "DO NOTHING"
		if c.newer != "" {
			conflict = "DO UPDATE SET (%[2]s) = ROW(excluded." + strings.Join(names, ", excluded.") + ") WHERE " + c.newer
		}
		c.write = []string{"INSERT INTO " + c.table + " (%[2]s) SELECT %[3]s FROM %[1]s ON CONFLICT (" + c.key + ") " + conflict}
	}
	for _, w := range c.write {
		write = append(write, fmt.Sprintf(w, batch, strings.Join(names, ", "), strings.Join(sel, ", "), keep))
	}
	return read, write
}

// moveSequence moves the destination's id sequence of c's table (one
// with ids kept) past src's ids, so kept ids stay clear of those it hands
// out; it returns the last id the sequence had handed out before (0: none).
func (s *Store) moveSequence(ctx context.Context, src *sql.Tx, c copyStep) (handed int64, err error) {
	if !strings.HasPrefix(c.fields, "id:bigint") {
		return 0, nil
	}
	var last sql.NullInt64
	if err := src.QueryRowContext(ctx, "SELECT max(id) FROM "+c.table).Scan(&last); err != nil || !last.Valid {
		return 0, err // nothing to keep
	}
	err = s.db.QueryRowContext(ctx, `SELECT coalesce(pg_sequence_last_value(q), 0), setval(q, greatest(?, coalesce(pg_sequence_last_value(q), 0)))
FROM (SELECT pg_get_serial_sequence(?, 'id')::regclass AS q) s`, last.Int64, c.table).Scan(&handed, new(int64))
	return handed, err
}

// CopyFrom copies the SQLite dataset src (one snapshot) into this PostgreSQL
// store as docs/design.md §10a says, in transactions of copyBatchBytes, and
// returns the rows written per table, in copy order; rows src no longer holds
// stay. Errors: s not PostgreSQL or src not SQLite; database errors (run it again).
func (s *Store) CopyFrom(ctx context.Context, src *Store) ([]Copied, error) {
	if s.d.engine != PostgreSQL || src.d.engine != SQLite {
		return nil, errors.New("copy: the source must be a SQLite store and the destination a PostgreSQL one")
	}
	tx, release, err := src.scanTx(ctx)
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", src.path, err)
	}
	defer release()
	unlock, err := advisoryLock(ctx, s.db, copyLockKey)
	if err != nil {
		return nil, fmt.Errorf("cannot take the copy lock: %w", err)
	}
	defer unlock()
	var out []Copied
	for _, c := range copySteps {
		n, err := s.copyStep(ctx, tx, c)
		if c.counted == nil {
			c.counted = []string{c.table}
		}
		for i, t := range c.counted {
			j := slices.IndexFunc(out, func(c Copied) bool { return c.Table == t })
			if j < 0 {
				j, out = len(out), append(out, Copied{Table: t})
			}
			out[j].Rows += n[i]
		}
		if err != nil {
			return out, fmt.Errorf("cannot copy %s: %w", c.table, err)
		}
	}
	return out, nil
}

// copyStep streams c's source rows and writes them in batches; it returns
// the rows each statement wrote.
func (s *Store) copyStep(ctx context.Context, src *sql.Tx, c copyStep) ([]int64, error) {
	handed, err := s.moveSequence(ctx, src, c)
	read, write := c.sql(handed)
	n := make([]int64, len(write))
	if err != nil {
		return n, err
	}
	var batch []byte // ",row,row..."
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		arg, wrote := "["+string(batch[1:])+"]", make([]int64, len(write))
		err := s.withTx(ctx, func(tx *sql.Tx) error {
			for i, w := range write {
				res, err := tx.ExecContext(ctx, w, arg)
				if err != nil {
					return err
				}
				wrote[i], _ = res.RowsAffected()
			}
			return nil
		})
		for i := range n {
			if err == nil {
				n[i] += wrote[i]
			}
		}
		batch = batch[:0]
		return err
	}
	err = each(ctx, src, read, nil, func(rows *sql.Rows) error {
		var row sql.RawBytes
		if err := rows.Scan(&row); err != nil {
			return err
		}
		if batch = appendNoNUL(append(batch, ','), row); len(batch) < copyBatchBytes {
			return nil
		}
		return flush()
	})
	if err != nil {
		return n, err
	}
	return n, flush()
}

// appendNoNUL appends the JSON row to batch without its escaped U+0000s,
// which PostgreSQL's text cannot hold (noNUL); every other escape as is.
func appendNoNUL(batch, row []byte) []byte {
	if !bytes.Contains(row, []byte(`\u0000`)) {
		return append(batch, row...)
	}
	for i := 0; i < len(row); i++ {
		switch {
		case row[i] != '\\':
			batch = append(batch, row[i])
		case bytes.HasPrefix(row[i:], []byte(`\u0000`)):
			i += len(`\u0000`) - 1
		default: // an escape: a backslash and the byte it escapes
			batch = append(batch, row[i:i+2]...)
			i++
		}
	}
	return batch
}
