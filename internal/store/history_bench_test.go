package store

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/sqlitedb"
)

// History benchmark fixture (issue 11): 200,000 videos with full text
// (~1.4 KB a row: description ~1.2 KB), 10 regions, a chart of 200 every
// 2 hours per region, TRENDFETCH_BENCH_ENTRIES entries in all (default
// 10,000,000, i.e. 50,000 captures over ~208 days), each video on ~50
// charts, and one video ("vhistory500") on 500. Built in bulk SQL (INSERT
// ... SELECT over recursive CTEs) through the real schema, triggers and
// indexes, entries inserted capture by capture in time order as runs do;
// cached in the temp dir by size and schema version, so only the first
// -bench run pays for it (several minutes at 10M).
const (
	histVideos  = 200_000
	histRegions = 10
	histRank    = 200
	histVideo   = "vhistory500"
)

var (
	histOnce sync.Once
	histPath string
	histErr  error
)

func histEntries() int {
	if n, err := strconv.Atoi(os.Getenv("TRENDFETCH_BENCH_ENTRIES")); err == nil && n >= 200_000 {
		return n
	}
	return 10_000_000
}

// historyDB returns the path of the cached history fixture.
func historyDB(b *testing.B) string {
	b.Helper()
	histOnce.Do(func() {
		migs, err := sqlitedb.Migrations(migrationsFS)
		if err != nil {
			histErr = err
			return
		}
		n := histEntries()
		histPath = filepath.Join(os.TempDir(), fmt.Sprintf("trendfetch-history-bench-%d-v%d.db", n, len(migs)))
		if _, err := os.Stat(histPath); err == nil {
			return
		}
		start := time.Now()
		tmp := histPath + ".building"
		os.Remove(tmp)
		os.Remove(tmp + "-wal")
		os.Remove(tmp + "-shm")
		if histErr = buildHistoryFixture(tmp, n); histErr != nil {
			return
		}
		histErr = os.Rename(tmp, histPath)
		fmt.Fprintf(os.Stderr, "history fixture: %d entries in %v (%s)\n", n, time.Since(start).Round(time.Second), histPath)
	})
	if histErr != nil {
		b.Fatal(histErr)
	}
	return histPath
}

// histParagraph is ~1.2 KB of description text.
var histParagraph = strings.Repeat("Official music video from the new album, out now on every platform. Subscribe for more videos, follow the tour dates and merch links below. ", 9)

func buildHistoryFixture(path string, n int) error {
	ctx := context.Background()
	s, err := Open(ctx, path)
	if err != nil {
		return err
	}
	defer s.Close()
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	exec := func(q string, args ...any) error {
		if _, err := conn.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("%.60s...: %w", strings.TrimSpace(q), err)
		}
		return nil
	}
	for _, p := range []string{"PRAGMA synchronous = OFF", "PRAGMA cache_size = -1048576"} {
		if err := exec(p); err != nil {
			return err
		}
	}
	if err := exec(`
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
INSERT INTO videos (rowid, id, title, description, channel_id, channel_title, category_id, tags,
                    published_at, duration, thumbnail_url, first_seen_at)
SELECT i, printf('v%010d', i), printf('Artist %d - Song number %d (Official Music Video)', i % 5000, i),
       printf('Song %d. ', i) || ?, printf('UC%022d', i % 5000), printf('Artist %d', i % 5000), '10',
       'music' || char(10) || 'official' || char(10) || printf('artist%d', i % 5000),
       '2025-01-01T00:00:00.000000Z', 'PT3M30S', printf('https://i.ytimg.com/vi/v%010d/default.jpg', i),
       '2025-01-01T00:00:00.000000Z'
FROM n`, histVideos, histParagraph); err != nil {
		return err
	}
	if err := exec(`INSERT INTO videos (id, title, description, first_seen_at) VALUES (?, 'The long-trending video', ?, '2025-01-01T00:00:00.000000Z')`,
		histVideo, histParagraph); err != nil {
		return err
	}
	perRegion := n / histRank / histRegions
	regionCodes := `(VALUES (0,'US'),(1,'GB'),(2,'JP'),(3,'DE'),(4,'FR'),(5,'IN'),(6,'BR'),(7,'KR'),(8,'CA'),(9,'MX'))`
	// Capture id c = k*10 + j + 1 for the k-th chart of region j.
	if err := exec(`
WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < ? - 1), r(j, code) AS `+regionCodes+`
INSERT INTO runs (id, region, started_at, finished_at, pages, videos, outcome)
SELECT id, code, t, t, 4, 200, 'success' FROM (
    SELECT k.i * 10 + r.j + 1 AS id, r.code AS code,
           strftime('%Y-%m-%dT%H:%M:%S.000000Z', '2025-01-01', '+' || (k.i * 2) || ' hours', '+' || r.j || ' minutes') AS t
    FROM k, r)
ORDER BY id`, perRegion); err != nil {
		return err
	}
	if err := exec(`
INSERT INTO captures (id, run_id, region, kind, query, captured_at, complete)
SELECT id, id, region, 'chart', '', started_at, 1 FROM runs ORDER BY id`); err != nil {
		return err
	}
	// Entries, capture by capture in time order (as runs store them), in
	// statements of 1,000 captures.
	total := perRegion * histRegions
	for first := 1; first <= total; first += 1000 {
		last := min(first+999, total)
		if err := exec(`
WITH RECURSIVE rk(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM rk WHERE n < 200),
c(id, k, j) AS (SELECT id, (id - 1) / 10, (id - 1) % 10 FROM captures WHERE id BETWEEN ? AND ?)
INSERT INTO entries (capture_id, rank, video, view_count, like_count, comment_count)
SELECT id, n, v, views, views / 40, views / 400 FROM (
    SELECT id, n, v, (v * 7919) % 5000000 + k * 1000 AS views FROM (
        SELECT c.id, rk.n, c.k, 1 + ((c.k * 4 + rk.n + c.j * 20011) % ?) AS v FROM c, rk))
ORDER BY id, n`, first, last, histVideos); err != nil {
			return err
		}
	}
	// vhistory500: rank 201 of the last 500 charts of US.
	if err := exec(`
INSERT INTO entries (capture_id, rank, video, view_count, like_count, comment_count)
SELECT c.id, 201, (SELECT rowid FROM videos WHERE id = ?), 1000000 + c.id, 5000, 100
FROM (SELECT id FROM captures WHERE region = 'US' ORDER BY captured_at DESC LIMIT 500) c ORDER BY c.id`, histVideo); err != nil {
		return err
	}
	return exec(`PRAGMA wal_checkpoint(TRUNCATE)`)
}

// BenchmarkHistoryBytesPerEntry measures, with dbstat, the bytes a chart
// entry costs on disk with its statistics and every index: entries plus
// entries_video (B/entry), and with the captures table and its indexes
// amortized (B/entry-all). Reference in the same run: the previous design
// (snapshots rows without statistics, 0005) at 1,000,000 rows
// (B/entry-snapshots0005).
func BenchmarkHistoryBytesPerEntry(b *testing.B) {
	s := openHistory(b)
	ctx := context.Background()
	var entries, pages, all int64
	for i := 0; i < b.N; i++ {
		if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM entries`).Scan(&entries); err != nil {
			b.Fatal(err)
		}
		if err := s.db.QueryRowContext(ctx, `SELECT sum(pgsize) FROM dbstat WHERE name IN ('entries', 'entries_video')`).Scan(&pages); err != nil {
			b.Fatal(err)
		}
		if err := s.db.QueryRowContext(ctx, `SELECT sum(pgsize) FROM dbstat WHERE name IN ('entries', 'entries_video', 'captures', 'captures_region_at', 'sqlite_autoindex_captures_1')`).Scan(&all); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(pages)/float64(entries), "B/entry")
	b.ReportMetric(float64(all)/float64(entries), "B/entry-all")
	b.ReportMetric(float64(entries), "entries")
	b.ReportMetric(snapshotBytesPerRow(b, 1_000_000), "B/entry-snapshots0005")
}

// snapshotBytesPerRow builds n rows of the 0005 snapshots table (with its
// index) the way runs stored them and returns its bytes per row.
func snapshotBytesPerRow(b *testing.B, n int) float64 {
	b.Helper()
	db, err := sqlitedb.Open(context.Background(), filepath.Join(b.TempDir(), "snap.db"), sqlitedb.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		`PRAGMA synchronous = OFF`,
		`CREATE TABLE snapshots (
    run_id INTEGER NOT NULL, region TEXT NOT NULL, kind TEXT NOT NULL DEFAULT 'chart', query TEXT NOT NULL DEFAULT '',
    rank INTEGER NOT NULL, video_id TEXT NOT NULL, captured_at TEXT NOT NULL,
    PRIMARY KEY (run_id, region, kind, query, rank)) WITHOUT ROWID`,
		`CREATE INDEX snapshots_video_region ON snapshots (video_id, region)`,
		fmt.Sprintf(`WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < %d - 1),
rk(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM rk WHERE n < 200)
INSERT INTO snapshots SELECT c.i + 1, 'US', 'chart', '', rk.n, printf('v%%010d', 1 + (c.i * 4 + rk.n) %% %d),
       strftime('%%Y-%%m-%%dT%%H:%%M:%%S.000000Z', '2025-01-01', '+' || (c.i * 2) || ' hours')
FROM c, rk ORDER BY c.i, rk.n`, n/200, histVideos),
	} {
		if _, err := db.Exec(q); err != nil {
			b.Fatal(err)
		}
	}
	var size int64
	if err := db.QueryRow(`SELECT sum(pgsize) FROM dbstat WHERE name IN ('snapshots', 'snapshots_video_region')`).Scan(&size); err != nil {
		b.Fatal(err)
	}
	return float64(size) / float64(n)
}

func openHistory(b *testing.B) *Store {
	b.Helper()
	s, err := Open(context.Background(), historyDB(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// reportP50 reports the median of ds in milliseconds.
func reportP50(b *testing.B, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, "p50-ms")
}

// BenchmarkHistoryChartLatest: the latest chart capture of a region with
// its 200 entries and statistics (`trendfetch chart --region US`).
func BenchmarkHistoryChartLatest(b *testing.B) {
	s := openHistory(b)
	ctx := context.Background()
	ds := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		_, es, err := s.CaptureAt(ctx, CaptureQuery{Region: "JP"})
		if err != nil || len(es) != histRank {
			b.Fatalf("%d entries, %v", len(es), err)
		}
		ds = append(ds, time.Since(start))
	}
	reportP50(b, ds)
}

// BenchmarkHistoryChartAt: the capture in force at a time in the middle.
func BenchmarkHistoryChartAt(b *testing.B) {
	s := openHistory(b)
	ctx := context.Background()
	at := time.Date(2025, 3, 1, 7, 0, 0, 0, time.UTC)
	ds := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if _, _, err := s.CaptureAt(ctx, CaptureQuery{Region: "GB", At: at}); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(start))
	}
	reportP50(b, ds)
}

// BenchmarkHistoryVideo500: the history of a video with 500 points
// (`trendfetch video ID`).
func BenchmarkHistoryVideo500(b *testing.B) {
	s := openHistory(b)
	ctx := context.Background()
	ds := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		h, err := s.History(ctx, histVideo)
		if err != nil || len(h.Points) != min(500, histEntries()/histRank/histRegions) {
			b.Fatalf("%d points, %v", len(h.Points), err)
		}
		ds = append(ds, time.Since(start))
	}
	reportP50(b, ds)
}

// BenchmarkHistorySavePage stores a 50-video page with new statistics into
// the fixture (200k videos, 10M entries): known videos (text unchanged),
// and new videos (FTS indexing included). Each page is a new capture of a
// region no fixture chart uses; they are deleted again afterwards.
func BenchmarkHistorySavePage(b *testing.B) {
	s := openHistory(b)
	ctx := context.Background()
	var known []Video
	rows, err := s.db.Query(`SELECT id, title, description, channel_id, channel_title, category_id, tags, thumbnail_url FROM videos WHERE rowid BETWEEN 1000 AND 1049`)
	if err != nil {
		b.Fatal(err)
	}
	for rows.Next() {
		var v Video
		var tags string
		if err := rows.Scan(&v.ID, &v.Title, &v.Description, &v.ChannelID, &v.ChannelTitle, &v.CategoryID, &tags, &v.ThumbnailURL); err != nil {
			b.Fatal(err)
		}
		v.Tags = splitTags(tags)
		v.PublishedAt = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
		v.Duration = "PT3M30S"
		known = append(known, v)
	}
	rows.Close()
	b.Cleanup(func() {
		s.db.Exec(`DELETE FROM entries WHERE capture_id IN (SELECT id FROM captures WHERE region = 'ZZ')`)
		s.db.Exec(`DELETE FROM captures WHERE region = 'ZZ'`)
		s.db.Exec(`DELETE FROM runs WHERE region = 'ZZ'`)
		s.db.Exec(`DELETE FROM videos WHERE id LIKE 'new-%'`)
	})
	for _, kind := range []string{"known", "new"} {
		b.Run(kind, func(b *testing.B) {
			ds := make([]time.Duration, 0, b.N)
			for i := 0; i < b.N; i++ {
				page := known
				if kind == "new" {
					page = make([]Video, 50)
					for k := range page {
						page[k] = benchVocab.video(fmt.Sprintf("new-%d-%d-%d", time.Now().UnixNano(), i, k))
					}
				} else {
					for k := range page {
						page[k].Views = i64(int64(1_000_000 + i*50 + k))
						page[k].Likes, page[k].Comments = i64(int64(i)), i64(int64(k))
					}
				}
				run, err := s.StartRun(ctx, Run{Region: "ZZ"})
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				if err := s.SaveSnapshot(ctx, Snapshot{RunID: run, Region: "ZZ", FirstRank: 1, Videos: page, At: time.Now()}); err != nil {
					b.Fatal(err)
				}
				ds = append(ds, time.Since(start))
			}
			reportP50(b, ds)
		})
	}
}

// BenchmarkHistoryExport exports the whole fixture (every capture) to
// /dev/null in a child process (this test binary, see exportChild) so its
// peak RSS is the export's alone: youtube-new CSV with full text, JSON
// Lines without descriptions, and Parquet with full text as `export
// --format parquet` writes it (LimitParquetMemory, region by region), to
// one file and to hive partitions by region and date (one writer at a
// time, as `--partition region,date`). Metrics: rows/s, peak-RSS-MB,
// file-MB (the bytes written), files, rows/cpu-s (CPU time of the child,
// steadier than rows/s on a shared machine), and for Parquet x-csv-rows/s
// (its rows/s over the CSV's in the same run).
func BenchmarkHistoryExport(b *testing.B) {
	path := historyDB(b)
	var csvRate float64
	for _, f := range []struct{ name, format, layout, noDesc, partition string }{
		{"youtube-new", "csv", LayoutYoutubeNew, "", ""},
		{"jsonl-no-description", "jsonl", "", "1", ""},
		{"parquet", "parquet", "", "", ""},
		{"parquet-partitioned", "parquet", "", "", "1"},
	} {
		b.Run(f.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				cmd := exec.Command(os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), "TF_EXPORT_CHILD="+path, "TF_EXPORT_FORMAT="+f.format,
					"TF_EXPORT_LAYOUT="+f.layout, "TF_EXPORT_NODESC="+f.noDesc, "TF_EXPORT_PARTITION="+f.partition)
				out, err := cmd.CombinedOutput()
				if err != nil {
					b.Fatalf("export child: %v\n%s", err, out)
				}
				var rows, hwm, size, files int64
				var secs, cpu float64
				if _, err := fmt.Sscanf(strings.TrimSpace(string(out)), "rows=%d secs=%g cpu=%g hwm_kb=%d bytes=%d files=%d", &rows, &secs, &cpu, &hwm, &size, &files); err != nil {
					b.Fatalf("export child output %q: %v", out, err)
				}
				rate := float64(rows) / secs
				b.ReportMetric(rate, "rows/s")
				if cpu > 0 {
					b.ReportMetric(float64(rows)/cpu, "rows/cpu-s")
				}
				b.ReportMetric(float64(hwm)/1024, "peak-RSS-MB")
				b.ReportMetric(float64(size)/(1<<20), "file-MB")
				b.ReportMetric(float64(files), "files")
				if f.format == "csv" {
					csvRate = rate
				} else if f.format == "parquet" && csvRate > 0 {
					b.ReportMetric(rate/csvRate, "x-csv-rows/s")
				}
			}
		})
	}
}

// exportChild runs one export for BenchmarkHistoryExport when the test
// binary is started with TF_EXPORT_CHILD=path, prints
// "rows=N secs=S cpu=C hwm_kb=K bytes=B files=F" and reports whether it
// ran.
// With TF_EXPORT_PARTITION set, each region and UTC day gets a writer of
// its own, flushed when the next one starts.
func exportChild() bool {
	path := os.Getenv("TF_EXPORT_CHILD")
	if path == "" {
		return false
	}
	fail := func(err error) {
		fmt.Println(err)
		os.Exit(1)
	}
	f := ExportFormat{Format: os.Getenv("TF_EXPORT_FORMAT"), Layout: os.Getenv("TF_EXPORT_LAYOUT"),
		PerCapture: true, NoDescription: os.Getenv("TF_EXPORT_NODESC") != ""}
	q := ExportQuery{NoDescription: f.NoDescription}
	if f.Format == "parquet" { // as cmd/trendfetch's export does
		LimitParquetMemory()
		q.GroupBy = []string{"region"}
	}
	partition := os.Getenv("TF_EXPORT_PARTITION") != ""
	ctx := context.Background()
	s, err := OpenReadOnly(ctx, path)
	if err != nil {
		fail(err)
	}
	defer s.Close()
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		fail(err)
	}
	cw := &countingWriter{w: devnull}
	bw := bufio.NewWriterSize(cw, 256<<10)
	var (
		w         ExportWriter
		part      string
		rows, n   int64
		flushPart = func() error {
			if err := w.Flush(); err != nil {
				return err
			}
			return bw.Flush()
		}
	)
	start := time.Now()
	err = s.Export(ctx, q, func(r *ExportRow) error {
		rows++
		if p := r.Region + r.CapturedAt.UTC().Format(time.DateOnly); w == nil || partition && p != part {
			if w != nil {
				if err := flushPart(); err != nil {
					return err
				}
			}
			var err error
			if w, err = NewExportWriter(bw, f); err != nil {
				return err
			}
			part = p
			n++
		}
		return w.Row(r)
	})
	if err == nil && w != nil {
		err = flushPart()
	}
	if err != nil {
		fail(err)
	}
	secs := time.Since(start).Seconds()
	fmt.Printf("rows=%d secs=%g cpu=%g hwm_kb=%d bytes=%d files=%d\n", rows, secs, cpuSeconds(), peakRSSKB(), cw.n, n)
	return true
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// cpuSeconds reads the process's user and system CPU time from
// /proc/self/stat (Linux, 100 ticks a second); 0 elsewhere. On a shared
// machine rows per CPU second varies less than rows per second.
func cpuSeconds() float64 {
	_, own, _ := procCPU("self")
	return own
}

// procCPU reads the parent and the user and system CPU seconds of process
// pid (own, and children: its ended children's) from /proc/PID/stat
// (Linux, 100 ticks a second); zeros elsewhere.
func procCPU(pid string) (ppid int, own, children float64) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, 0, 0
	}
	// Fields after the command name (which may hold spaces): state is
	// field 3, ppid 4, utime 14, stime 15, cutime 16, cstime 17.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 15 {
		return 0, 0, 0
	}
	n := make([]float64, 4)
	for i := range n {
		n[i], _ = strconv.ParseFloat(f[11+i], 64)
	}
	ppid, _ = strconv.Atoi(f[1])
	return ppid, (n[0] + n[1]) / 100, (n[2] + n[3]) / 100
}

// peakRSSKB reads VmHWM from /proc/self/status (Linux); 0 elsewhere.
func peakRSSKB() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// BenchmarkHistoryDueForStats: the statistics step's query for one region
// at the end of the fixture (a week of charts followed, every 6 h).
func BenchmarkHistoryDueForStats(b *testing.B) {
	s := openHistory(b)
	ctx := context.Background()
	var last string
	var runID int64
	if err := s.db.QueryRow(`SELECT max(captured_at), max(run_id) FROM captures WHERE region = 'JP'`).Scan(&last, &runID); err != nil {
		b.Fatal(err)
	}
	now := parseTime(sql.NullString{String: last, Valid: true}).Add(time.Minute)
	ds := make([]time.Duration, 0, b.N)
	n := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		due, err := s.DueForStats(ctx, "JP", runID, now.Add(-168*time.Hour), now.Add(-6*time.Hour))
		if err != nil {
			b.Fatal(err)
		}
		n = len(due)
		ds = append(ds, time.Since(start))
	}
	reportP50(b, ds)
	b.ReportMetric(float64(n), "due")
}
