package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
	"github.com/trendfetch/trendfetch/internal/store"
	"github.com/trendfetch/trendfetch/internal/store/storetest"
)

// fillStore writes captures of 200 videos (1 KB descriptions) in regions
// to database file db through the store, one capture per region and hour.
func fillStore(t *testing.T, db string, captures int, regions ...string) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	desc := strings.Repeat("A long description line.\r\n", 40)
	for c := 0; c < captures; c++ {
		for _, region := range regions {
			run, err := st.StartRun(ctx, store.Run{Region: region})
			if err != nil {
				t.Fatal(err)
			}
			vs := make([]store.Video, 200)
			for i := range vs {
				views := int64(1000*c + i)
				vs[i] = store.Video{ID: fmt.Sprintf("%s%09d", region[:1], i), Title: fmt.Sprintf("Video %d", i), Description: desc, Views: &views}
			}
			at := time.Date(2026, 11, 1, c, 0, 0, 0, time.UTC)
			if err := st.SaveSnapshot(ctx, store.Snapshot{RunID: run, Region: region, FirstRank: 1, Videos: vs, At: at}); err != nil {
				t.Fatal(err)
			}
			if err := st.CompleteCapture(ctx, run, region, store.KindChart, "", at); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// partitionedExport fills e's store with 30 hourly captures of US and GB
// (2026-11-01 00:00 .. 2026-11-02 05:00, fillStore) and exports them as
// Parquet partitioned by region and date into e.dir/name/, returned with
// its trailing slash.
func partitionedExport(t *testing.T, e *env, name string) string {
	t.Helper()
	fillStore(t, e.dbPath(), 30, "US", "GB")
	dir := filepath.Join(e.dir, name) + "/"
	if res := e.run("export", "--format", "parquet", "--every", "capture", "--partition", "region,date", "--output", dir); res.code != 0 {
		t.Fatalf("export --partition: exit %d\n%s", res.code, res.stderr)
	}
	return dir
}

// csvRecords parses a whole CSV.
func csvRecords(t *testing.T, s string) [][]string {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(s)).ReadAll()
	if err != nil {
		t.Fatalf("%v\n%.300s", err, s)
	}
	return recs
}

// dirNames lists the names in dir, sorted.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// TestExportOutputs (issue 23 item 5, issue 21 items 7 and 8): one file
// per region under the datasets' names; several regions in one CSV only
// with a region column; --layout with jsonl refused; --output replaced
// whole, never left partial; --spreadsheet-safe.
func TestExportOutputs(t *testing.T) {
	_, url, e := sampleInproc(t, "US", "GB")
	for _, r := range []string{"US", "GB"} {
		if res := e.run("--api-endpoint", url, "run", "--region", r); res.code != 0 {
			t.Fatalf("run %s: exit %d\n%s", r, res.code, res.stderr)
		}
	}
	res := e.run("export")
	if res.code != 2 || res.stdout != "" || !strings.Contains(res.stderr, "cannot write 2 regions (GB,US) to one CSV") ||
		!strings.Contains(res.stderr, "Try: trendfetch export --output DIR/") {
		t.Errorf("multi-region CSV to stdout: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	res = e.run("export", "--region-column", "--layout", "trending-daily")
	recs := csvRecords(t, res.stdout)
	if res.code != 0 || len(recs) != 1+2*youtubetest.SampleSize || recs[0][len(recs[0])-1] != "region" ||
		recs[1][len(recs[1])-1] != "US" && recs[1][len(recs[1])-1] != "GB" {
		t.Errorf("--region-column: exit %d, %d records\n%s", res.code, len(recs), res.stderr)
	}
	for _, c := range []struct {
		layout string
		want   []string
	}{
		{"youtube-new", []string{"GBvideos.csv", "USvideos.csv"}},
		{"trending-daily", []string{"GB_youtube_trending_data.csv", "US_youtube_trending_data.csv"}},
	} {
		dir := filepath.Join(e.dir, c.layout) + "/"
		if res := e.run("export", "--layout", c.layout, "--output", dir); res.code != 0 {
			t.Fatalf("--output DIR: exit %d\n%s", res.code, res.stderr)
		}
		if got := dirNames(t, dir); !slices.Equal(got, c.want) {
			t.Errorf("--layout %s --output DIR/: %v, want %v", c.layout, got, c.want)
		}
		b, err := os.ReadFile(filepath.Join(dir, c.want[1]))
		if n := len(csvRecords(t, string(b))); err != nil || n != 1+youtubetest.SampleSize {
			t.Errorf("%s: %d records, %v", c.want[1], n, err)
		}
	}
	for _, args := range [][]string{
		{"export", "--format", "jsonl", "--layout", "youtube-new"},
		{"export", "--format", "jsonl", "--spreadsheet-safe"},
	} {
		if res := e.run(args...); res.code != 2 || !strings.Contains(res.stderr, "only for --format csv") && !strings.Contains(res.stderr, "are for --format csv") {
			t.Errorf("%v: exit %d %q", args, res.code, res.stderr)
		}
	}
	if res := e.run("export", "--format", "jsonl"); res.code != 0 || strings.Count(res.stdout, "\n") != 2*youtubetest.SampleSize {
		t.Errorf("jsonl of two regions: exit %d\n%s", res.code, res.stderr)
	}

	// --output FILE: an old file is replaced as a whole; no temporary file stays.
	out := filepath.Join(e.dir, "out", "us.csv")
	os.MkdirAll(filepath.Dir(out), 0o755)
	os.WriteFile(out, []byte("old\n"), 0o644)
	if res := e.run("export", "--region", "US", "--output", out); res.code != 0 {
		t.Fatalf("--output FILE: exit %d\n%s", res.code, res.stderr)
	}
	if b, _ := os.ReadFile(out); len(csvRecords(t, string(b))) != 1+youtubetest.SampleSize || strings.HasPrefix(string(b), "old") {
		t.Errorf("--output FILE not replaced:\n%.200s", b)
	}
	if got := dirNames(t, filepath.Dir(out)); !slices.Equal(got, []string{"us.csv"}) {
		t.Errorf("files next to the output: %v", got)
	}
	if res := e.run("export", "--region", "US", "--output", filepath.Join(e.dir, "missing", "dir", "x.csv")); res.code != 2 || !strings.Contains(res.stderr, "--output") {
		t.Errorf("--output into a missing directory: exit %d %q", res.code, res.stderr)
	}
}

// TestExportToClosedPipe: `trendfetch export | head -1` ends quietly with
// exit 0 when the reader goes away (EPIPE), not killed by SIGPIPE.
func TestExportToClosedPipe(t *testing.T) {
	e := newEnv(t)
	fillStore(t, e.dbPath(), 30, "US") // 6,000 rows, ~6 MB: far more than a pipe holds
	cmd := exec.Command(binary, "export", "--every", "capture")
	for k, v := range e.vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(pipe).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "video_id,") {
		t.Fatalf("first line %q, %v", line, err)
	}
	pipe.Close() // as head does after its lines
	err = cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) || err != nil || stderr.Len() != 0 {
		t.Errorf("export into a closed pipe: %v (exit %d), stderr %q; want exit 0, quiet", err, cmd.ProcessState.ExitCode(), stderr.String())
	}
}

// TestPruneNeverShrinksTheFile (issue 29 item 7): prune frees pages inside
// the file for later runs and never truncates it, as serve maps it into
// memory (a file that shrinks under a map can SIGBUS its reader); there is
// no --vacuum.
func TestPruneNeverShrinksTheFile(t *testing.T) {
	e := newInproc(t, "", nil)
	fillStore(t, e.dbPath(), 10, "US", "GB")
	size := func() int64 {
		fi, err := os.Stat(e.dbPath())
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	full := size()
	for _, args := range [][]string{{"prune", "--older-than", "1ns"}, {"prune", "--policy", "youtube", "--as-of", "2099-01-01"}} {
		if res := e.run(args...); res.code != 0 || !strings.Contains(res.stdout, "removed") {
			t.Fatalf("%v: exit %d\n%s%s", args, res.code, res.stdout, res.stderr)
		}
		if got := size(); got < full {
			t.Fatalf("%v: the database file shrank (%d -> %d bytes)", args, full, got)
		}
	}
	if res := e.run("prune", "--older-than", "1ns", "--vacuum"); res.code != 2 {
		t.Errorf("prune --vacuum: exit %d, want 2 (no such flag)\n%s", res.code, res.stderr)
	}
}

// TestExportParquetPartitions (issue 23 item 4): --format parquet
// --partition region,date writes hive-style directories that DuckDB reads
// as one table with region and date columns.
func TestExportParquetPartitions(t *testing.T) {
	e := newEnv(t)
	dir := partitionedExport(t, e, "pq")
	var files []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, rel)
		}
		return nil
	})
	want := []string{"region=GB/date=2026-11-01/part-0.parquet", "region=GB/date=2026-11-02/part-0.parquet",
		"region=US/date=2026-11-01/part-0.parquet", "region=US/date=2026-11-02/part-0.parquet"}
	if !slices.Equal(files, want) {
		t.Fatalf("files %v, want %v", files, want)
	}
	got := storetest.DuckDB(t, "SELECT region, CAST(date AS VARCHAR), count(*), sum(view_count), count(DISTINCT captured_at) FROM read_parquet('"+dir+
		"**/*.parquet', hive_partitioning = true) GROUP BY ALL ORDER BY ALL")
	// Capture c (hour c) has views 1000c + rank-1: 200 rows sum to 200,000c + 19,900.
	sum := func(from, to int) int {
		n := 0
		for c := from; c < to; c++ {
			n += 200000*c + 19900
		}
		return n
	}
	exp := fmt.Sprintf("[\"GB\",\"2026-11-01\",\"4800\",\"%d\",\"24\"]\n[\"GB\",\"2026-11-02\",\"1200\",\"%d\",\"6\"]\n"+
		"[\"US\",\"2026-11-01\",\"4800\",\"%d\",\"24\"]\n[\"US\",\"2026-11-02\",\"1200\",\"%d\",\"6\"]\n", sum(0, 24), sum(24, 30), sum(0, 24), sum(24, 30))
	if got != exp {
		t.Errorf("DuckDB over the partitions:\n%s\nwant\n%s", got, exp)
	}
	// Date partitions alone: one directory a day, with both regions.
	days := filepath.Join(e.dir, "days") + "/"
	if res := e.run("export", "--format", "parquet", "--every", "capture", "--partition", "date", "--output", days); res.code != 0 {
		t.Fatalf("export --partition date: exit %d\n%s", res.code, res.stderr)
	}
	got = storetest.DuckDB(t, "SELECT CAST(date AS VARCHAR), string_agg(DISTINCT region, ',' ORDER BY region), count(*) FROM read_parquet('"+days+
		"*/part-0.parquet', hive_partitioning = true) GROUP BY ALL ORDER BY ALL")
	if want := "[\"2026-11-01\",\"GB,US\",\"9600\"]\n[\"2026-11-02\",\"GB,US\",\"2400\"]\n"; got != want {
		t.Errorf("DuckDB over the date partitions:\n%s\nwant\n%s", got, want)
	}
	for _, args := range [][]string{
		{"export", "--format", "parquet", "--partition", "region"},
		{"export", "--format", "parquet", "--partition", "week", "--output", dir},
		{"export", "--format", "parquet", "--layout", "youtube-new"},
	} {
		if res := e.run(args...); res.code != 2 || res.stderr == "" {
			t.Errorf("%v: exit %d %q", args, res.code, res.stderr)
		}
	}
}

// TestStorePolicyRuns (issue 23 item 2): a new database follows youtube
// (prune --dry-run --as-of 31 days on shows everything going, 29 days
// nothing); a database that held data before store.policy existed is kept,
// and each run warns once what to choose; keep logs once; amended at 31
// days removes text only; a bad store.policy is a config error.
func TestStorePolicyRuns(t *testing.T) {
	type report struct {
		Policy       string `json:"policy"`
		Captures     int64  `json:"captures"`
		Samples      int64  `json:"samples"`
		TextsCleared int64  `json:"texts_cleared"`
		Videos       int64  `json:"videos"`
	}
	_, url, e := sampleInproc(t, "US")
	if res := e.run("--api-endpoint", url, "run", "--region", "US"); res.code != 0 {
		t.Fatalf("run: exit %d\n%s", res.code, res.stderr)
	}
	dry := func(args ...string) report {
		t.Helper()
		res := e.run(append([]string{"prune", "--dry-run", "--json"}, args...)...)
		var r report
		if err := json.Unmarshal([]byte(res.stdout), &r); err != nil || res.code != 0 {
			t.Fatalf("prune --dry-run %v: exit %d %v\n%s%s", args, res.code, err, res.stdout, res.stderr)
		}
		return r
	}
	day := func(d int) string { return time.Now().AddDate(0, 0, d).UTC().Format(time.RFC3339) }
	if r := dry("--as-of", day(29)); r.Policy != "youtube" || r.Captures != 0 || r.Videos != 0 {
		t.Errorf("new database at +29 days: %+v", r)
	}
	if r := dry("--as-of", day(31)); r.Policy != "youtube" || r.Captures != 1 || r.Videos != youtubetest.SampleSize {
		t.Errorf("new database at +31 days: %+v", r)
	}
	if r := dry("--as-of", day(31), "--policy", "amended"); r.Captures != 0 || r.TextsCleared != youtubetest.SampleSize {
		t.Errorf("amended at +31 days: %+v", r)
	}
	if r := dry("--as-of", time.Now().AddDate(0, 37, 0).UTC().Format(time.RFC3339), "--policy", "amended"); r.Captures != 1 {
		t.Errorf("amended at +37 months: %+v", r)
	}
	res := e.run("--config", e.writeConfig("store:\n  policy: keep\n"), "--api-endpoint", url, "run", "--region", "US")
	if res.code != 0 || strings.Count(res.stderr, "store.policy keep: nothing is deleted") != 1 {
		t.Errorf("run with keep: exit %d\n%s", res.code, res.stderr)
	}
	if res := e.run("--config", e.writeConfig("store:\n  policy: forever\n"), "runs"); res.code != 2 || !strings.Contains(res.stderr, "store.policy") {
		t.Errorf("bad store.policy: exit %d %q", res.code, res.stderr)
	}

	// An older database: it held data (40 days old) when store.policy came.
	old := newEnv(t)
	old.vars["YOUTUBE_API_KEY"] = "k"
	fillStore(t, old.dbPath(), 1, "US")
	st, err := store.Open(context.Background(), old.dbPath())
	if err != nil {
		t.Fatal(err)
	}
	aged := time.Now().AddDate(0, 0, -40).UTC().Format("2006-01-02T15:04:05.000000Z")
	for _, q := range []string{`UPDATE captures SET captured_at = ?`, `UPDATE video_stats SET last_seen_at = ?`, `UPDATE videos SET first_seen_at = ?`,
		`INSERT OR REPLACE INTO store_meta (key, value) VALUES ('legacy_data', '1')`} {
		args := []any{aged}
		if strings.Contains(q, "store_meta") {
			args = nil
		}
		if _, err := st.DB().Exec(q, args...); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	res = old.run("--api-endpoint", url, "run", "--region", "US")
	if res.code != 0 || strings.Count(res.stderr, "store.policy is not set and this database holds data older than 30 days: kept") != 1 {
		t.Errorf("run on an older database without store.policy: exit %d\n%s", res.code, res.stderr)
	}
	if res := old.run("runs"); res.code != 0 || !strings.Contains(res.stderr, "note: store.policy is not set") {
		t.Errorf("runs on an older database without store.policy: exit %d %q", res.code, res.stderr)
	}
	if res := old.run("quota", "status"); res.code != 0 || !strings.Contains(res.stderr, "note: store.policy is not set") ||
		!strings.Contains(res.stderr, "set store.policy to youtube") {
		t.Errorf("quota status on an older database without store.policy: exit %d %q", res.code, res.stderr)
	}
	for _, args := range [][]string{{"runs"}, {"quota", "status"}} {
		if res := e.run(args...); res.code != 0 || strings.Contains(res.stderr, "store.policy") {
			t.Errorf("%v on a new database: exit %d %q", args, res.code, res.stderr)
		}
	}
	res = old.run("export", "--every", "capture")
	if n := len(csvRecords(t, res.stdout)) - 1; res.code != 0 || n != 200+youtubetest.SampleSize {
		t.Errorf("older database after a run: %d rows, want its 200 old ones kept and %d new", n, youtubetest.SampleSize)
	}
	if r := dry("--policy", "youtube"); r.Captures != 0 {
		t.Errorf("dry run of the new env changed: %+v", r)
	}
}

// TestExportOutputSpecialFiles (issue 31 item 1): --output writes a FIFO, a
// character device or /dev/stdout in place; only a regular file or a new
// path is replaced by a rename, and a directory where a file goes is a
// usage error.
func TestExportOutputSpecialFiles(t *testing.T) {
	e := newEnv(t)
	fillStore(t, e.dbPath(), 1, "US")
	want := 1 + 200 // header and one capture

	fifo := filepath.Join(e.dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		b, _ := os.ReadFile(fifo) // blocks until the export opens it
		got <- string(b)
	}()
	if res := e.run("export", "--output", fifo); res.code != 0 {
		t.Fatalf("--output FIFO: exit %d\n%s", res.code, res.stderr)
	}
	select {
	case b := <-got:
		if n := len(csvRecords(t, b)); n != want {
			t.Errorf("the FIFO's reader got %d records, want %d", n, want)
		}
	case <-time.After(5 * time.Second):
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close() // the reader's EOF
		}
		t.Errorf("the FIFO's reader got nothing")
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced: %v %v", fi.Mode(), err)
	}

	// A character device: a copy of /dev/null (mknod needs root) first, so
	// that a regression fails here before it can replace the real one.
	for _, dev := range []string{filepath.Join(e.dir, "null"), os.DevNull} {
		if dev != os.DevNull {
			if err := syscall.Mknod(dev, syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
				t.Logf("mknod %s: %v (not root?): only %s is tried", dev, err, os.DevNull)
				continue
			}
		}
		if res := e.run("export", "--output", dev); res.code != 0 {
			t.Errorf("--output %s: exit %d\n%s", dev, res.code, res.stderr)
		}
		if fi, err := os.Lstat(dev); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
			t.Fatalf("%s is no longer a character device: %v %v", dev, fi.Mode(), err)
		}
	}

	// /dev/stdout (a symbolic link to the process's descriptor 1, a pipe here).
	if res := e.run("export", "--output", "/dev/stdout"); res.code != 0 || len(csvRecords(t, res.stdout)) != want {
		t.Errorf("--output /dev/stdout: exit %d, %d bytes out\n%s", res.code, len(res.stdout), res.stderr)
	}

	// A directory where a region's file goes.
	dir := filepath.Join(e.dir, "datasets")
	if err := os.MkdirAll(filepath.Join(dir, "USvideos.csv"), 0o755); err != nil {
		t.Fatal(err)
	}
	res := e.run("export", "--output", dir+"/")
	if res.code != 2 || !strings.Contains(res.stderr, "USvideos.csv") || !strings.Contains(res.stderr, "is a directory") {
		t.Errorf("a directory where a file goes: exit %d\n%s", res.code, res.stderr)
	}
	if names := dirNames(t, dir); !slices.Equal(names, []string{"USvideos.csv"}) {
		t.Errorf("left in %s: %v", dir, names)
	}
}

// openPTY opens a pseudo-terminal (/dev/ptmx, pts(4)) and returns its
// controller and terminal ends, closed with the test.
func openPTY(t *testing.T) (ptmx, tty *os.File) {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ptmx.Close() })
	fd := int(ptmx.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tty.Close() })
	return ptmx, tty
}

// TestExportParquetNotToATerminal (issue 31 item 15): Parquet on a
// terminal is refused with a hint, and nothing is written to it.
func TestExportParquetNotToATerminal(t *testing.T) {
	e := newEnv(t)
	fillStore(t, e.dbPath(), 1, "US")
	ptmx, tty := openPTY(t)
	cmd := exec.Command(binary, "export", "--format", "parquet")
	for k, v := range e.vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = tty, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	shown := make(chan int)
	go func() { // what reached the terminal
		b := make([]byte, 1<<20)
		n := 0
		for {
			k, err := ptmx.Read(b)
			n += k
			if err != nil {
				shown <- n
				return
			}
		}
	}()
	cmd.Wait()
	tty.Close()
	res := humanErrors(stderr.String())
	if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(res, "not to a terminal") || !strings.Contains(res, "Try: trendfetch export --format parquet --output") {
		t.Errorf("parquet to a terminal: exit %d\n%s", code, res)
	}
	select {
	case n := <-shown:
		if n != 0 {
			t.Errorf("%d bytes written to the terminal", n)
		}
	case <-time.After(5 * time.Second):
		t.Errorf("the terminal's reader did not end")
	}
	if res := e.run("export", "--format", "parquet"); res.code != 0 || !strings.HasPrefix(res.stdout, "PAR1") {
		t.Errorf("parquet to a pipe: exit %d\n%s", res.code, res.stderr)
	}
}
