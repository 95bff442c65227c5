package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trendfetch/trendfetch/internal/exitcode"
	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
	"github.com/trendfetch/trendfetch/internal/store"
)

// TestCopyCommand replays four days of the recorded 2017 US and GB charts
// into SQLite (searches, channels, categories, the statistics step), then
// `copy` moves them into PostgreSQL: both stores export the same bytes
// (CSV in both layouts, JSON Lines), a second copy copies nothing, and the
// URL's password is in no output.
func TestCopyCommand(t *testing.T) {
	data := youtubetest.DataDir(t)
	emu := youtubetest.New()
	var dates []string // US's; GB's chart is its latest on or before
	for _, f := range []string{"GBvideos.csv", "USvideos.csv"} {
		_, d, err := emu.LoadDaysFile(filepath.Join(data, "kaggle_youtube_new_2017", f))
		if err != nil {
			t.Fatal(err)
		}
		dates = d
	}
	loadRecordedExtras(t, emu, data)
	url := emu.StartTest(t)
	e := newEnv(t)
	e.vars["YOUTUBE_API_KEY"] = "k"
	cfg := e.writeConfig("regions: [US, GB]\nsearches:\n  - {q: python, max_pages: 2}\nchannels:\n  enabled: true\n  refresh: 1d\ncategories:\n  enabled: true\n  refresh: 7d\nstats:\n  every: 0s\n")
	for _, d := range dates[:4] {
		if err := emu.SetDate(d); err != nil {
			t.Fatal(err)
		}
		if res := e.run("--config", cfg, "--api-endpoint", url, "run", "--all"); res.code != 0 {
			t.Fatalf("%s: exit %d\n%s", d, res.code, res.stderr)
		}
	}
	src, err := store.OpenReadOnly(context.Background(), e.dbPath())
	if err != nil {
		t.Fatal(err)
	}
	var texts, samples int
	if err := src.DB().QueryRow(`SELECT (SELECT count(*) FROM video_texts), (SELECT count(*) FROM stats_samples)`).Scan(&texts, &samples); err != nil || texts == 0 || samples == 0 {
		t.Fatalf("the replay stored %d text versions and %d samples (%v); the test needs both", texts, samples, err)
	}
	src.Close()

	const pw = "copy-s3cret"
	_, pgURL := pgDatabase(t)
	db := strings.Replace(pgURL, "://trendfetch@", "://trendfetch:"+pw+"@", 1) // trust: any password
	exports := func(database string) []string {
		var out []string
		for _, f := range [][]string{{"--layout", "youtube-new"}, {"--layout", "trending-daily"}, {"--format", "jsonl"}} {
			args := append([]string{"--config", cfg, "--database", database, "export", "--every", "capture"}, f...)
			if f[0] == "--layout" {
				args = append(args, "--region-column")
			}
			res := e.run(args...)
			if res.code != 0 || len(res.stdout) < 100000 {
				t.Fatalf("export %v: exit %d, %d bytes\n%s", f, res.code, len(res.stdout), res.stderr)
			}
			out = append(out, res.stdout)
		}
		return out
	}
	want := exports(e.dbPath())
	copied := func() map[string]int64 {
		res := e.run("--config", cfg, "--database", db, "copy", "--from", e.dbPath(), "--json")
		if res.code != 0 || strings.Contains(res.stdout+res.rawStderr, pw) {
			t.Fatalf("copy: exit %d (or the password shows)\n%s%s", res.code, res.stdout, res.rawStderr)
		}
		var out struct{ Tables []store.Copied }
		if err := json.Unmarshal([]byte(res.stdout), &out); err != nil {
			t.Fatalf("copy --json: %v\n%s", err, res.stdout)
		}
		n := map[string]int64{}
		for _, c := range out.Tables {
			n[c.Table] = c.Rows
		}
		for i, got := range exports(db) {
			if got != want[i] {
				t.Fatalf("export %d: PostgreSQL wrote %d bytes, SQLite %d:\n%s", i, len(got), len(want[i]), firstLineDiff(want[i], got))
			}
		}
		return n
	}
	n := copied()
	for _, table := range []string{"channels", "categories", "videos", "video_texts", "stats_samples", "runs", "captures", "entries"} {
		if n[table] == 0 {
			t.Errorf("copied no %s: %v", table, n)
		}
	}
	if n["runs"] != 8 || n["video_texts"] != int64(texts) || n["stats_samples"] != int64(samples) {
		t.Errorf("copied %v; want 8 runs, %d text versions, %d samples", n, texts, samples)
	}
	for table, rows := range copied() {
		if rows != 0 {
			t.Errorf("the second copy wrote %d rows into %s", rows, table)
		}
	}
	res := e.run("--config", cfg, "--database", db, "copy", "--from", e.dbPath())
	if res.code != 0 || !strings.Contains(res.stdout, "entries                   0 rows copied") {
		t.Errorf("copy: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
}

// firstLineDiff shows the first line where a and b differ.
func firstLineDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return "line " + al[i][:min(len(al[i]), 300)] + "\n     " + bl[i][:min(len(bl[i]), 300)]
		}
	}
	return "one is a prefix of the other"
}

// TestCopyRun: `copy` without --from, into SQLite, from a file that is no
// database or from a URL is a usage error naming the setting and not the
// URL's password; into PostgreSQL it reports the rows written per table
// (JSON), and a second copy writes none.
func TestCopyRun(t *testing.T) {
	p := newInproc(t, "", nil)
	p.seed(2, "US")
	ctx := context.Background()
	copyTo := func(database string, o copyOptions) error {
		t.Helper()
		if *p.a.flags["database"] = database; p.a.loadConfig() != nil {
			t.Fatalf("database %s refused", database)
		}
		p.reset()
		o.io, o.engine = p.a.ioStreams, p.engine()
		return copyRun(ctx, &o)
	}
	const pg = "postgres://tf:copy-s3cret@127.0.0.1:1/none"
	none := filepath.Join(p.dir, "none.db")
	for _, c := range []struct {
		database, from, want string
	}{
		{p.db, p.db, "database: copy writes into PostgreSQL"},
		{pg, "", "--from: give the SQLite database"},
		{pg, none, "--from " + none + ": no trendfetch SQLite database"},
		{pg, pg, "--from: copy reads a SQLite file"},
	} {
		if err := copyTo(c.database, copyOptions{from: c.from}); exit(err) != exitcode.Usage || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("copy --from %q into %s: %v (exit %d), want exit 2 and %q", c.from, c.database, err, exit(err), c.want)
		}
	}
	_, url := pgDatabase(t)
	var out struct {
		Tables  []store.Copied `json:"tables"`
		Seconds *float64       `json:"seconds"`
	}
	if err := copyTo(url, copyOptions{from: p.db, asJSON: true}); err != nil || json.Unmarshal(p.out.Bytes(), &out) != nil || out.Seconds == nil {
		t.Fatalf("copy --json: %v\n%s", err, p.out.String())
	}
	rows := map[string]int64{}
	for _, c := range out.Tables {
		rows[c.Table] = c.Rows
	}
	if rows["runs"] != 2 || rows["captures"] != 2 || rows["entries"] != 6 {
		t.Errorf("copied %v, want 2 runs, 2 captures, 6 entries", rows)
	}
	if err := copyTo(url, copyOptions{from: p.db}); err != nil || !strings.Contains(p.out.String(), "entries                   0 rows copied\n") {
		t.Errorf("second copy: %v\n%s", err, p.out.String())
	}
}
