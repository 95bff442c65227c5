package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// fillDay stores day d of a small dataset in s through the store's own
// write methods: charts of regions of two pages (a third of the videos
// retitled each day, so text versions), a partial search capture, GB's run
// and chart left running (finished by the next day's fill), samples, channels and
// categories.
func fillDay(t *testing.T, s *Store, d int, regions ...string) {
	t.Helper()
	ctx := context.Background()
	at := time.Date(2026, 3, 1+d, 12, 0, 0, 0, time.UTC)
	check := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	var open []Run
	rows, err := s.db.Query(`SELECT id, region FROM runs WHERE outcome = 'running'`)
	check(err)
	for rows.Next() {
		var r Run
		check(rows.Scan(&r.ID, &r.Region))
		open = append(open, r)
	}
	check(rows.Err())
	for _, r := range open {
		check(s.CompleteCapture(ctx, r.ID, r.Region, KindChart, "", at))
		r.Outcome, r.FinishedAt, r.ShadowDenials = OutcomeSuccess, at, map[string]map[string]int64{"new": {"videos.list": 2}}
		check(s.FinishRun(ctx, r))
	}
	for i, region := range regions {
		at := at.Add(time.Duration(i) * time.Hour)
		run, err := s.StartRun(ctx, Run{Credential: "default", Region: region, StartedAt: at, PID: 42 + d, Host: "h"})
		check(err)
		vs := testVideos(region, 60)
		for i := range vs {
			if i%3 == 0 {
				vs[i].Title = fmt.Sprintf("%s on day %d", vs[i].Title, d)
			}
			vs[i].Views = i64(int64(1000*d + i))
			if i%7 == 0 {
				vs[i].Likes = nil
			}
		}
		check(s.SaveSnapshot(ctx, Snapshot{RunID: run, Region: region, FirstRank: 1, Videos: vs[:50], At: at}))
		check(s.SaveSnapshot(ctx, Snapshot{RunID: run, Region: region, FirstRank: 51, Videos: vs[50:], At: at}))
		check(s.SaveSnapshot(ctx, Snapshot{RunID: run, Region: region, Kind: KindSearch, Query: "q", FirstRank: 1, Videos: vs[5:9], At: at}))
		_, err = s.SaveSamples(ctx, []Sample{{VideoID: vs[1].ID, Views: i64(int64(d))}, {VideoID: vs[2].ID}}, at.Add(time.Minute))
		check(err)
		check(s.UpsertCategories(ctx, region, []Category{{ID: "10", Title: fmt.Sprintf("Music %d", d), Assignable: true}}, at))
		check(s.UpsertChannels(ctx, []Channel{{ID: "UC" + region, Title: "Channel " + region, Subscribers: i64(int64(d))}}, at))
		if region != "GB" { // GB's run (and chart) stays running until the next day
			check(s.CompleteCapture(ctx, run, region, KindChart, "", at))
			check(s.FinishRun(ctx, Run{ID: run, Outcome: OutcomeSuccess, FinishedAt: at.Add(time.Minute), Units: map[string]int64{"units": 3},
				ShadowDenials: map[string]map[string]int64{"new": {"videos.list": int64(d + 1)}}}))
		}
	}
}

// dumpTables renders every copied table by natural keys (no surrogate
// ids), one line a row, in an order both engines give.
func dumpTables(t *testing.T, s *Store) string {
	t.Helper()
	var b strings.Builder
	for _, q := range []string{
		`SELECT * FROM channels ORDER BY id`,
		`SELECT * FROM categories ORDER BY region, id`,
		`SELECT * FROM category_fetches ORDER BY region`,
		`SELECT * FROM store_meta ORDER BY key`,
		`SELECT id, title, description, channel_id, channel_title, category_id, tags, published_at, duration, thumbnail_url,
        first_seen_at, text_version, text_since, text_refreshed_at FROM videos ORDER BY id`,
		`SELECT v.id, s.view_count, s.like_count, s.comment_count, s.last_seen_at FROM video_stats s JOIN videos v ON v.rowid = s.video_rowid ORDER BY v.id`,
		`SELECT v.id, t.version, t.title, t.description, t.channel_title, t.category_id, t.tags, t.thumbnail_url, t.since
 FROM video_texts t JOIN videos v ON v.rowid = t.video ORDER BY v.id, t.version`,
		`SELECT v.id, s.sampled_at, s.view_count, s.like_count, s.comment_count FROM stats_samples s JOIN videos v ON v.rowid = s.video ORDER BY v.id, s.sampled_at`,
		`SELECT credential, region, started_at, finished_at, pages, videos, units, unmetered, outcome, reason, retry_after_ms, retry_at, pid, host, calls,
 shadow_denials FROM runs ORDER BY started_at, region`,
		`SELECT r.started_at, r.region, c.region, c.kind, c.query, c.captured_at, c.complete FROM captures c JOIN runs r ON r.id = c.run_id
 ORDER BY r.started_at, r.region, c.kind, c.query`,
		`SELECT r.started_at, c.region, c.kind, c.query, e.rank, v.id, e.view_count, e.like_count, e.comment_count, e.text
 FROM entries e JOIN captures c ON c.id = e.capture_id JOIN runs r ON r.id = c.run_id JOIN videos v ON v.rowid = e.video
 ORDER BY r.started_at, c.region, c.kind, c.query, e.rank`,
	} {
		rows, err := s.db.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		vals := make([]any, len(cols))
		for rows.Next() {
			for i := range vals {
				vals[i] = new(*string)
			}
			if err := rows.Scan(vals...); err != nil {
				t.Fatal(err)
			}
			for _, v := range vals {
				if p := *v.(**string); p != nil {
					fmt.Fprintf(&b, "%q|", *p)
				} else {
					b.WriteString("null|")
				}
			}
			b.WriteByte('\n')
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
		b.WriteString("--\n")
	}
	return b.String()
}

// copyAndCompare copies src into dst and checks that both hold the same
// rows and export the same bytes (CSV in both layouts, JSON Lines); it
// returns the rows written per table.
func copyAndCompare(t *testing.T, dst, src *Store) map[string]int64 {
	t.Helper()
	got, err := dst.CopyFrom(context.Background(), src)
	if err != nil {
		t.Fatalf("CopyFrom: %v", err)
	}
	n := map[string]int64{}
	for _, c := range got {
		n[c.Table] = c.Rows
	}
	if a, b := dumpTables(t, src), dumpTables(t, dst); a != b {
		t.Fatalf("the stores differ after the copy:\n%s", firstDiff(a, b))
	}
	for _, f := range copyFormats {
		a, b := exportAll(t, src, f), exportAll(t, dst, f)
		if len(a) < 1000 || !bytes.Equal(a, b) {
			t.Fatalf("%+v export: %d bytes from SQLite, %d from PostgreSQL:\n%s", f, len(a), len(b), firstDiff(string(a), string(b)))
		}
	}
	return n
}

// copyFormats are the exports a copy keeps byte for byte: CSV in both
// layouts (every capture), JSON Lines.
var copyFormats = []ExportFormat{{Format: "csv", Layout: LayoutYoutubeNew, PerCapture: true, RegionColumn: true},
	{Format: "csv", Layout: LayoutTrendingDaily, PerCapture: true, RegionColumn: true}, {Format: "jsonl"}}

// firstDiff shows the first line where a and b differ.
func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d:\n  sqlite:   %.300s\n  postgres: %.300s", i+1, al[i], bl[i])
		}
	}
	return fmt.Sprintf("%d lines against %d", len(al), len(bl))
}

// TestCopyToPostgres: a SQLite dataset copied into an empty PostgreSQL
// store holds the same rows and exports the same bytes; a second copy
// writes nothing; a copy after another day writes that day (and the run
// that finished since) and the stores agree again; runs started after the
// copy get new ids. Into a store that already holds another host's runs
// and captures, the ids that are taken are mapped, and a second copy
// finds them by their natural keys.
func TestCopyToPostgres(t *testing.T) {
	ctx := context.Background()
	src, _ := openTest(t)
	fillDay(t, src, 0, "US", "GB")
	fillDay(t, src, 1, "US", "GB")
	if _, err := src.db.Exec(`INSERT INTO store_meta (key, value) VALUES ('legacy_data', '1')`); err != nil {
		t.Fatal(err) // a database older than store.policy keeps everything
	}
	dst := openPG(t)
	n := copyAndCompare(t, dst, src)
	for _, table := range []string{"channels", "categories", "category_fetches", "store_meta", "videos", "video_stats", "video_texts",
		"stats_samples", "runs", "captures", "entries"} {
		if n[table] == 0 {
			t.Errorf("copied no %s: %v", table, n)
		}
	}
	if n["entries"] != 2*2*(60+4) || n["runs"] != 4 {
		t.Errorf("copied %d entries and %d runs, want 256 and 4", n["entries"], n["runs"])
	}
	for table, rows := range copyAndCompare(t, dst, src) {
		if rows != 0 {
			t.Errorf("the second copy wrote %d rows into %s", rows, table)
		}
	}
	fillDay(t, src, 2, "US", "GB")
	n = copyAndCompare(t, dst, src)
	if n["runs"] != 3 || n["entries"] != 2*(60+4) || n["videos"] != 2*20 {
		t.Errorf("the copy of day 2 wrote %v; want 3 runs (2 new, 1 finished), 128 entries, 40 videos retitled", n)
	}
	if id := startRun(t, dst, "US"); id != 7 {
		t.Errorf("a run started after the copy got id %d, want 7", id)
	}

	other := openPG(t)
	fillDay(t, other, 0, "JP")
	fillDay(t, other, 1, "JP")
	if _, err := other.CopyFrom(ctx, src); err != nil {
		t.Fatal(err)
	}
	var moved int
	if err := other.db.QueryRow(`SELECT count(*) FROM runs WHERE region <> 'JP' AND id > 6`).Scan(&moved); err != nil || moved != 2 {
		t.Errorf("%d copied runs with new ids, want 2 (ids 1 and 2 are JP's) (%v)", moved, err)
	}
	again, err := other.CopyFrom(ctx, src)
	for _, c := range again {
		if c.Rows != 0 || err != nil {
			t.Errorf("the second copy into a shared store wrote %d rows into %s (%v)", c.Rows, c.Table, err)
		}
	}
	// Without JP's rows (entries go with their captures), the stores agree.
	if _, err := other.db.Exec(`
DELETE FROM captures WHERE region = 'JP';
DELETE FROM runs WHERE region = 'JP';
DELETE FROM stats_samples WHERE video IN (SELECT rowid FROM videos WHERE id LIKE 'JP-%');
DELETE FROM video_stats WHERE video_rowid IN (SELECT rowid FROM videos WHERE id LIKE 'JP-%');
DELETE FROM videos WHERE id LIKE 'JP-%';
DELETE FROM channels WHERE id = 'UCJP';
DELETE FROM categories WHERE region = 'JP';
DELETE FROM category_fetches WHERE region = 'JP'`); err != nil {
		t.Fatal(err)
	}
	if a, b := dumpTables(t, src), dumpTables(t, other); a != b {
		t.Fatalf("the stores differ after a copy into a shared store:\n%s", firstDiff(a, b))
	}
	for _, f := range copyFormats[:2] {
		if a, b := exportAll(t, src, f), exportAll(t, other, f); !bytes.Equal(a, b) {
			t.Errorf("%+v export differs after a copy into a shared store:\n%s", f, firstDiff(string(a), string(b)))
		}
	}
}

// TestRunsInTimeOrder: runs list newest first by start time, whatever
// their ids (issue 40 item 12): runs recorded out of order on both
// engines, and a copy into a store that holds later runs (the copied
// runs take ids after them); a cursor of one run a page visits each run
// once.
func TestRunsInTimeOrder(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	forEachEngine(t, func(t *testing.T, s *Store) {
		for _, h := range []int{3, 1, 4, 1, 5, 0, 2} {
			if _, err := s.StartRun(ctx, Run{Region: "US", StartedAt: at.Add(time.Duration(h) * time.Hour)}); err != nil {
				t.Fatal(err)
			}
		}
		checkRunsOrder(t, s, 7)
	})
	src, _ := openTest(t)
	fillDay(t, src, 0, "US", "GB")
	dst := openPG(t)
	fillDay(t, dst, 1, "JP")
	fillDay(t, dst, 2, "JP")
	if _, err := dst.CopyFrom(ctx, src); err != nil {
		t.Fatal(err)
	}
	checkRunsOrder(t, dst, 4)
}

// checkRunsOrder pages through s's runs one at a time: n runs, each once,
// started_at non-increasing.
func checkRunsOrder(t *testing.T, s *Store, n int) {
	t.Helper()
	var got []Run
	for before := int64(0); len(got) <= n; {
		page, err := s.RunsPage(context.Background(), RunsQuery{Before: before, Limit: 1})
		if err != nil || len(page) == 0 {
			break
		}
		got, before = append(got, page[0]), page[0].ID
	}
	all, err := s.Runs(context.Background(), 0)
	if err != nil || len(got) != n || len(all) != n {
		t.Fatalf("paged %d runs, listed %d (%v), want %d", len(got), len(all), err, n)
	}
	for i := 1; i < n; i++ {
		if got[i].ID == got[i-1].ID || got[i].StartedAt.After(got[i-1].StartedAt) || all[i].StartedAt.After(all[i-1].StartedAt) {
			t.Errorf("run %d (started %s) after run %d (started %s)", got[i].ID, got[i].StartedAt, got[i-1].ID, got[i-1].StartedAt)
		}
	}
}

// TestCopyBesideLiveHosts: a copy succeeds while another host runs and
// prunes the destination, and writes everything (a second copy writes
// nothing); a run copied while running, then abandoned by a run of the
// destination, ends with its source's outcome after the next copy (issue
// 39 item 6).
func TestCopyBesideLiveHosts(t *testing.T) {
	ctx := context.Background()
	src, _ := openTest(t)
	for d := range 3 {
		fillDay(t, src, d, "US", "GB") // GB's run of day 2 left running
	}
	dst := openPG(t)
	stop, done := make(chan struct{}), make(chan error)
	go func(live *Store) {
		for i := 0; ; i++ {
			id, err := live.StartRun(ctx, Run{Region: "JP", Host: "b"})
			if err == nil {
				err = live.SaveSnapshot(ctx, Snapshot{RunID: id, Region: "JP", FirstRank: 1, Videos: testVideos(fmt.Sprint("JP", i), 3)})
			}
			if _, perr := live.Prune(ctx, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), false); err == nil && !errors.Is(perr, errCopying) {
				err = perr
			}
			select {
			case <-stop:
				done <- err
				return
			default:
			}
		}
	}(reopen(t, dst))
	for range 3 {
		if _, err := dst.CopyFrom(ctx, src); err != nil {
			t.Errorf("copy beside a running and pruning host: %v", err)
		}
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatalf("the other host: %v", err)
	}
	again, err := dst.CopyFrom(ctx, src)
	for _, c := range again {
		if c.Rows != 0 || err != nil {
			t.Errorf("a copy after those beside the live host wrote %d rows into %s (%v)", c.Rows, c.Table, err)
		}
	}
	if _, err := dst.AbandonRuns(ctx, "default", "GB", time.Now()); err != nil {
		t.Fatal(err)
	}
	fillDay(t, src, 3, "US")
	if _, err := dst.CopyFrom(ctx, src); err != nil {
		t.Fatal(err)
	}
	var outcome string
	if err := dst.db.QueryRow(`SELECT outcome FROM runs WHERE region = 'GB' AND started_at LIKE '2026-03-03%'`).Scan(&outcome); err != nil || outcome != "success" {
		t.Errorf("the run copied while running, abandoned, then finished at the source: %q (%v), want success", outcome, err)
	}
}

// BenchmarkCopyToPostgres copies the history fixture (200,000 videos with
// full text, TRENDFETCH_BENCH_ENTRIES entries, default 10,000,000) into an
// empty PostgreSQL store: rows written per second over every table, and
// the Go heap's peak (sampled) against the fixture's size.
func BenchmarkCopyToPostgres(b *testing.B) {
	src := openHistory(b)
	done, peak := make(chan struct{}), make(chan uint64)
	go func() {
		var m runtime.MemStats
		var most uint64
		for {
			select {
			case <-done:
				peak <- most
				return
			case <-time.After(20 * time.Millisecond):
				runtime.ReadMemStats(&m)
				most = max(most, m.HeapInuse)
			}
		}
	}()
	var rows int64
	var took time.Duration
	for b.Loop() {
		b.StopTimer()
		dst := openPG(b)
		b.StartTimer()
		start := time.Now()
		copied, err := dst.CopyFrom(context.Background(), src)
		if err != nil {
			b.Fatal(err)
		}
		took += time.Since(start)
		for _, c := range copied {
			rows += c.Rows
			b.Logf("%s: %d rows", c.Table, c.Rows)
		}
	}
	close(done)
	b.ReportMetric(float64(rows)/took.Seconds(), "rows/s")
	b.ReportMetric(float64(<-peak)/(1<<20), "MB-heap-peak")
}

// TestNULText: a U+0000 in a video's or channel's text (which PostgreSQL's
// text cannot hold) is dropped on both engines, so a run stores its page,
// and a SQLite dataset that holds one copies into PostgreSQL (issue 40
// item 2).
func TestNULText(t *testing.T) {
	ctx := context.Background()
	forEachEngine(t, func(t *testing.T, s *Store) {
		vs := testVideos("z", 1)
		vs[0].Title, vs[0].Description, vs[0].Tags = "a\x00b", "d\x00", []string{"t\x00"}
		if err := s.SaveSnapshot(ctx, Snapshot{RunID: startRun(t, s, "US"), Region: "US", FirstRank: 1, Videos: vs}); err != nil {
			t.Fatal(err)
		}
		if err := s.UpsertChannels(ctx, []Channel{{ID: "UCz", Title: "c\x00"}}, time.Time{}); err != nil {
			t.Fatal(err)
		}
		if err := s.RefreshText(ctx, vs, time.Now()); err != nil {
			t.Fatal(err)
		}
		v, err := s.Video(ctx, vs[0].ID)
		if err != nil || v.Title != "ab" || v.Description != "d" || !slices.Equal(v.Tags, []string{"t"}) {
			t.Errorf("stored %q %q %q (%v), want ab, d, [t]", v.Title, v.Description, v.Tags, err)
		}
	})
	src, _ := openTest(t)
	fillDay(t, src, 0, "US")
	if _, err := src.db.Exec(`UPDATE videos SET title = title || char(0) || 'x', tags = char(0)`); err != nil {
		t.Fatal(err)
	}
	if _, err := openPG(t).CopyFrom(ctx, src); err != nil {
		t.Errorf("copy of a dataset with U+0000 in its text: %v", err)
	}
}
