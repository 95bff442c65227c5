package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/trendfetch/trendfetch/internal/sqlitedb"
)

// TestMigrateFresh: SQLite only (its file: tables in sqlite_schema, WAL,
// the directory's mode); TestOpenConcurrentGoroutines migrates both engines.
func TestMigrateFresh(t *testing.T) {
	ctx := context.Background()
	s, path := openTest(t)
	have, want, err := s.SchemaVersion(ctx)
	if err != nil || have != want || want < 2 {
		t.Fatalf("SchemaVersion = %d, %d, %v", have, want, err)
	}
	var names []string
	rows, err := s.db.Query(`SELECT name FROM schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		rows.Scan(&n)
		names = append(names, n)
	}
	rows.Close()
	if len(names) != want || names[0] != "0001_init.sql" {
		t.Errorf("schema_migrations = %v", names)
	}
	for _, tbl := range []string{"videos", "video_stats", "runs", "captures", "entries", "stats_samples", "categories", "videos_fts", "channels", "videos_tri"} {
		var n int
		s.db.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name = ?`, tbl).Scan(&n)
		if n != 1 {
			t.Errorf("table %s missing", tbl)
		}
	}
	var mode string
	s.db.QueryRow(`PRAGMA journal_mode`).Scan(&mode)
	if mode != "wal" {
		t.Errorf("journal_mode = %q", mode)
	}
	fi, err := os.Stat(filepath.Dir(path))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("dir mode = %v, %v", fi.Mode(), err)
	}

	// Reopening is a no-op: no new rows in schema_migrations.
	s2, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	var n int
	s2.db.QueryRow(`SELECT count(*) FROM schema_migrations`).Scan(&n)
	if n != want {
		t.Errorf("after reopen %d migration rows, want %d", n, want)
	}
}

func TestMigrateNewerRefused(t *testing.T) {
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		if _, err := s.db.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, '0999_future.sql', 'x')`); err != nil {
			t.Fatal(err)
		}
		for name, open := range map[string]func(context.Context, string) (*Store, error){"Open": Open, "OpenReadOnly": OpenReadOnly} {
			_, err := open(ctx, database(t, s))
			var sve *SchemaVersionError
			if !errors.As(err, &sve) || sve.Have != 999 || !strings.Contains(err.Error(), "newer") {
				t.Errorf("%s: %v", name, err)
			}
		}
	})
}

func TestOpenReadOnlyOlderSchema(t *testing.T) {
	forEachEngine(t, func(t *testing.T, s *Store) {
		if _, err := s.db.Exec(`DELETE FROM schema_migrations WHERE version > 1`); err != nil {
			t.Fatal(err)
		}
		_, err := OpenReadOnly(context.Background(), database(t, s))
		var sve *SchemaVersionError
		if !errors.As(err, &sve) || !strings.Contains(err.Error(), "older") {
			t.Errorf("OpenReadOnly on old schema: %v", err)
		}
	})
}

func TestMigrateUpgrade(t *testing.T) {
	// SQLite only: it migrates an old release's file.
	// A database at version 1 with a video gets 0002 (FTS) applied and the
	// existing video indexed by its 'rebuild'.
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	db := openAtVersion(t, path, 1)
	if _, err := db.Exec(`INSERT INTO videos (id, title, first_seen_at) VALUES ('old', 'ancient okapi', 'x')`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if hits := search(t, s, SearchQuery{Text: "okapi"}); len(hits) != 1 {
		t.Errorf("pre-existing video not indexed: %v", hits)
	}
}

func TestMigrateFromV2(t *testing.T) {
	// SQLite only: it migrates an old release's file.
	// A released v2 database with a chart keeps it through 0003's rebuild
	// of snapshots, and its videos become findable by substring (0004).
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v2.db")
	db := openAtVersion(t, path, 2)
	for _, q := range []string{
		`INSERT INTO runs (id, region, started_at, units) VALUES (1, 'JP', 'x', '{"units":1}')`,
		`INSERT INTO videos (id, title, first_seen_at) VALUES ('a', '東京タワーの夜景', 'x'), ('b', 'second', 'x')`,
		`INSERT INTO snapshots (run_id, region, kind, rank, video_id, captured_at) VALUES (1, 'JP', 'chart', 1, 'a', 'x'), (1, 'JP', 'chart', 2, 'b', 'x')`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	chart, err := s.Chart(ctx, 1, "JP")
	if err != nil || len(chart) != 2 || chart[0].VideoID != "a" || chart[1].Rank != 2 {
		t.Errorf("chart after migration: %+v, %v", chart, err)
	}
	if hits := search(t, s, SearchQuery{Text: "タワー", Region: "JP"}); len(hits) != 1 || hits[0].VideoID != "a" {
		t.Errorf("pre-existing video not in the trigram index: %+v", hits)
	}
	runs, err := s.Runs(ctx, 0)
	if err != nil || len(runs) != 1 || runs[0].Units["units"] != 1 || len(runs[0].Calls) != 0 {
		t.Errorf("runs after migration: %+v, %v", runs, err)
	}
	if err := s.Check(ctx); err != nil {
		t.Error(err)
	}
}

// TestOpenConcurrentGoroutines: hosts that open a new database at once
// (SQLite: BEGIN IMMEDIATE; PostgreSQL: the migration advisory lock) all
// succeed and migrate it once.
func TestOpenConcurrentGoroutines(t *testing.T) {
	forEachDatabase(t, func(t *testing.T, path string) {
		const n = 8
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s, err := Open(context.Background(), path)
				if err != nil {
					errs <- err
					return
				}
				errs <- s.Close()
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
		checkMigratedOnce(t, path)
	})
}

// TestOpenConcurrentProcesses re-runs this test binary as several OS
// processes that open one fresh database at the same moment.
func TestOpenConcurrentProcesses(t *testing.T) {
	if os.Getenv("TRENDFETCH_STORE_HELPER") != "" {
		t.Skip("helper")
	}
	forEachDatabase(t, testOpenConcurrentProcesses)
}

func testOpenConcurrentProcesses(t *testing.T, path string) {
	start := filepath.Join(t.TempDir(), "go")
	const n = 6
	cmds := make([]*exec.Cmd, n)
	outs := make([]*strings.Builder, n)
	for i := range cmds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), "TRENDFETCH_STORE_HELPER=open", "HELPER_DB="+path, "HELPER_START="+start,
			fmt.Sprintf("HELPER_REGION=R%d", i))
		outs[i] = &strings.Builder{}
		cmd.Stdout, cmd.Stderr = outs[i], outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
	}
	// Release them together once all are running.
	if err := os.WriteFile(start, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("process %d: %v\n%s", i, err, outs[i])
		}
	}
	checkMigratedOnce(t, path)
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if c, _ := s.CountVideos(context.Background()); c != n*50 {
		t.Errorf("%d videos stored, want %d", c, n*50)
	}
}

// TestHelperProcess is the child side of TestOpenConcurrentProcesses: open
// the fresh database and save one page.
func TestHelperProcess(t *testing.T) {
	if os.Getenv("TRENDFETCH_STORE_HELPER") != "open" {
		return // only run as a helper process (a skip would be listed by make test)
	}
	for {
		if _, err := os.Stat(os.Getenv("HELPER_START")); err == nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	ctx := context.Background()
	s, err := Open(ctx, os.Getenv("HELPER_DB"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	region := os.Getenv("HELPER_REGION")
	run := startRun(t, s, region)
	if err := s.SaveSnapshot(ctx, Snapshot{RunID: run, Region: region, FirstRank: 1, Videos: testVideos(region, 50), At: timeNow()}); err != nil {
		t.Fatal(err)
	}
}

func checkMigratedOnce(t *testing.T, path string) {
	t.Helper()
	s, err := OpenReadOnly(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var n, distinct int
	s.db.QueryRow(`SELECT count(*), count(DISTINCT version) FROM schema_migrations`).Scan(&n, &distinct)
	if _, want, _ := s.SchemaVersion(context.Background()); n != want || distinct != want {
		t.Errorf("schema_migrations has %d rows (%d distinct), want %d", n, distinct, want)
	}
}

// TestMigrateFromV5 (SQLite only: it migrates an old release's file) builds a database with the schema of the release before
// captures (migrations 0001-0005) holding runs, a chart, a category chart
// and search hits, and opens it with this binary: every run, snapshot and
// video is kept; snapshots become captures (complete when their run
// succeeded) and entries without statistics (NULL, never guessed).
func TestMigrateFromV5(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v5.db")
	db := openAtVersion(t, path, 5)
	for _, q := range []string{
		`INSERT INTO runs (id, region, started_at, outcome) VALUES (1, 'JP', '2026-01-01T00:00:00.000000Z', 'success'),
		                                                   (2, 'JP', '2026-01-02T00:00:00.000000Z', 'denied'),
		                                                   (3, 'US', '2026-01-02T00:00:00.000000Z', 'running')`,
		`INSERT INTO videos (id, title, first_seen_at) VALUES ('a', '東京タワーの夜景', 'x'), ('b', 'second', 'x'), ('c', 'third', 'x')`,
		`INSERT INTO video_stats (video_rowid, view_count, last_seen_at) SELECT rowid, 7, 'x' FROM videos`,
		`INSERT INTO snapshots (run_id, region, kind, query, rank, video_id, captured_at) VALUES
		    (1, 'JP', 'chart', '', 1, 'a', '2026-01-01T00:00:01.000000Z'), (1, 'JP', 'chart', '', 2, 'b', '2026-01-01T00:00:02.000000Z'),
		    (1, 'JP', 'category', '10', 1, 'b', '2026-01-01T00:00:03.000000Z'),
		    (1, 'JP', 'search', 'tower', 1, 'a', '2026-01-01T00:00:04.000000Z'),
		    (2, 'JP', 'chart', '', 1, 'b', '2026-01-02T00:00:01.000000Z'), (2, 'JP', 'chart', '', 2, 'a', '2026-01-02T00:00:01.000000Z'),
		    (3, 'US', 'chart', '', 1, 'c', '2026-01-02T00:00:01.000000Z')`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	type cap struct {
		run                int64
		region, kind, q, t string
		complete           bool
		entries            string
	}
	rows, err := s.db.Query(`
SELECT c.run_id, c.region, c.kind, c.query, c.captured_at, c.complete,
       group_concat(e.rank || ':' || v.id || ':' || coalesce(e.view_count, 'null') || ':' || coalesce(e.like_count, 'null') || ':' || coalesce(e.comment_count, 'null'), ' ' ORDER BY e.rank)
FROM captures c JOIN entries e ON e.capture_id = c.id JOIN videos v ON v.rowid = e.video
GROUP BY c.id ORDER BY c.id`)
	if err != nil {
		t.Fatal(err)
	}
	var got []cap
	for rows.Next() {
		var c cap
		if err := rows.Scan(&c.run, &c.region, &c.kind, &c.q, &c.t, &c.complete, &c.entries); err != nil {
			t.Fatal(err)
		}
		got = append(got, c)
	}
	rows.Close()
	want := []cap{
		{1, "JP", "chart", "", "2026-01-01T00:00:01.000000Z", true, "1:a:null:null:null 2:b:null:null:null"},
		{1, "JP", "category", "10", "2026-01-01T00:00:03.000000Z", true, "1:b:null:null:null"},
		{1, "JP", "search", "tower", "2026-01-01T00:00:04.000000Z", true, "1:a:null:null:null"},
		{2, "JP", "chart", "", "2026-01-02T00:00:01.000000Z", false, "1:b:null:null:null 2:a:null:null:null"},
		{3, "US", "chart", "", "2026-01-02T00:00:01.000000Z", false, "1:c:null:null:null"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("captures after migration:\n got %v\nwant %v", got, want)
	}
	var n int
	if err := s.db.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name = 'snapshots'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("snapshots still there: %d, %v", n, err)
	}
	if nv, err := s.CountVideos(ctx); err != nil || nv != 3 {
		t.Errorf("videos after migration: %d, %v", nv, err)
	}
	if runs, err := s.Runs(ctx, 0); err != nil || len(runs) != 3 {
		t.Errorf("runs after migration: %d, %v", len(runs), err)
	}
	if hits := search(t, s, SearchQuery{Text: "third", Region: "US"}); len(hits) != 1 || hits[0].VideoID != "c" {
		t.Errorf("region filter after migration: %+v", hits)
	}
	if err := s.Check(ctx); err != nil {
		t.Error(err)
	}
}

// openAtVersion creates a database at path with only the first n embedded
// migrations applied, as an older release left it.
func openAtVersion(t *testing.T, path string, n int) *sql.DB {
	t.Helper()
	entries, err := fs.ReadDir(migrationsFS, ".")
	if err != nil {
		t.Fatal(err)
	}
	old := fstest.MapFS{}
	for _, e := range entries[:n] {
		b, err := fs.ReadFile(migrationsFS, e.Name())
		if err != nil {
			t.Fatal(err)
		}
		old[e.Name()] = &fstest.MapFile{Data: b}
	}
	db, err := sqlitedb.Open(context.Background(), path, sqlitedb.Options{Migrations: old})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// TestMigrateRunsSuccessUnmetered (SQLite only: it migrates an old
// release's file) opens a database of the release before
// runs stored success_unmetered, where such a run was outcome 'success'
// with unmetered > 0 (mapped on read), holding every kind of run and a
// capture that refers to one: the migration stores success_unmetered, keeps
// every other row and column, the references, the index and the integrity;
// the table then refuses a plain success with unmetered calls.
func TestMigrateRunsSuccessUnmetered(t *testing.T) {
	ctx := context.Background()
	entries, err := fs.ReadDir(migrationsFS, ".")
	if err != nil {
		t.Fatal(err)
	}
	before := slices.IndexFunc(entries, func(e fs.DirEntry) bool { return strings.HasSuffix(e.Name(), "_runs_success_unmetered.sql") })
	if before < 0 {
		t.Fatal("no *_runs_success_unmetered.sql migration")
	}
	path := filepath.Join(t.TempDir(), "old.db")
	db := openAtVersion(t, path, before)
	for _, q := range []string{
		`INSERT INTO runs (id, credential, region, started_at, finished_at, pages, videos, units, unmetered, outcome, reason, pid, host, calls) VALUES
		    (1, 'p', 'US', '2026-01-01T00:00:00.000000Z', '2026-01-01T00:00:09.000000Z', 4, 200, '{"units":4}', 0, 'success', '', 7, 'h', '{"videos.list":4}'),
		    (2, 'p', 'US', '2026-01-02T00:00:00.000000Z', '2026-01-02T00:00:09.000000Z', 4, 200, '{"units":1}', 3, 'success', '3 calls sent unmetered', 8, 'h', '{"videos.list":4}'),
		    (3, 'p', 'GB', '2026-01-02T00:00:00.000000Z', '2026-01-02T00:00:09.000000Z', 1, 50, '{}', 2, 'failed', 'boom', 9, 'h', '{"videos.list":2}'),
		    (4, 'p', 'GB', '2026-01-03T00:00:00.000000Z', NULL, 0, 0, '{}', 0, 'running', '', 10, 'h', '{}')`,
		`INSERT INTO captures (run_id, region, kind, captured_at, complete) VALUES (2, 'US', 'chart', '2026-01-02T00:00:01.000000Z', 1)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	dump := func(db *sql.DB) []string {
		rows, err := db.Query(`SELECT id, credential, region, started_at, coalesce(finished_at, '-'), pages, videos, units, unmetered, outcome, reason, pid, host, calls FROM runs ORDER BY id`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			v := make([]any, 14)
			p := make([]any, len(v))
			for i := range v {
				p[i] = &v[i]
			}
			if err := rows.Scan(p...); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%q", v))
		}
		return out
	}
	old := dump(db)
	db.Close()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got := dump(s.db)
	want := slices.Clone(old)
	want[1] = strings.Replace(want[1], `"success"`, `"success_unmetered"`, 1)
	if !slices.Equal(got, want) {
		t.Errorf("runs after migration:\n got %q\nwant %q", got, want)
	}
	runs, err := s.Runs(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	var outcomes []Outcome
	for _, r := range runs {
		outcomes = append(outcomes, r.Outcome)
	}
	if fmt.Sprint(outcomes) != "[running failed success_unmetered success]" {
		t.Errorf("Runs outcomes %v", outcomes)
	}
	if last, err := s.LastSuccess(ctx, "p"); err != nil || len(last) != 1 || !last["US"].Equal(time.Date(2026, 1, 1, 0, 0, 9, 0, time.UTC)) {
		t.Errorf("LastSuccess = %v, %v; want US's metered run only", last, err)
	}
	var n int
	s.db.QueryRow(`SELECT count(*) FROM captures c JOIN runs r ON r.id = c.run_id WHERE r.outcome = 'success_unmetered'`).Scan(&n)
	if n != 1 {
		t.Errorf("the capture of run 2 lost its run: %d", n)
	}
	var index string
	s.db.QueryRow(`SELECT group_concat(sql, '; ') FROM sqlite_schema WHERE type IN ('index', 'trigger') AND tbl_name = 'runs'`).Scan(&index)
	if index != "CREATE INDEX runs_started ON runs (started_at, id); CREATE INDEX runs_region_started ON runs (region, started_at, id)" {
		t.Errorf("indexes and triggers of runs: %q, want runs_started and runs_region_started", index)
	}
	if err := s.Check(ctx); err != nil {
		t.Error(err)
	}
	if err := s.db.QueryRow(`SELECT count(*) FROM pragma_foreign_key_check`).Scan(&n); err != nil || n != 0 {
		t.Errorf("foreign_key_check: %d rows, %v", n, err)
	}
	if _, err := s.db.Exec(`INSERT INTO captures (run_id, region, kind, captured_at) VALUES (99, 'US', 'chart', 'x')`); err == nil {
		t.Error("a capture of no run was accepted: foreign keys off after the migration")
	}
	for _, bad := range []string{`UPDATE runs SET outcome = 'success' WHERE id = 2`, `UPDATE runs SET outcome = 'success_unmetered' WHERE id = 1`} {
		if _, err := s.db.Exec(bad); err == nil || !strings.Contains(err.Error(), "CHECK") {
			t.Errorf("%s: %v, want a CHECK failure", bad, err)
		}
	}
}

// TestFinishRunStoresSuccessUnmetered: the run path stores the outcome as
// given, success_unmetered with its unmetered calls, and refuses a plain
// success with unmetered calls.
func TestFinishRunStoresSuccessUnmetered(t *testing.T) {
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		id, err := s.StartRun(ctx, Run{Region: "US"})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.FinishRun(ctx, Run{ID: id, Outcome: OutcomeSuccess, Unmetered: 2}); err == nil {
			t.Error("a plain success with 2 unmetered calls was stored")
		}
		if err := s.FinishRun(ctx, Run{ID: id, Outcome: OutcomeSuccessUnmetered, Unmetered: 2}); err != nil {
			t.Fatal(err)
		}
		var stored string
		if err := s.db.QueryRow(`SELECT outcome FROM runs WHERE id = ?`, id).Scan(&stored); err != nil || stored != string(OutcomeSuccessUnmetered) {
			t.Errorf("stored outcome %q, %v; want success_unmetered", stored, err)
		}
		if runs, err := s.Runs(ctx, 1); err != nil || runs[0].Outcome != OutcomeSuccessUnmetered {
			t.Errorf("Runs: %+v, %v", runs, err)
		}
	})
}

// TestSessionBounds: every PostgreSQL connection has statement_timeout and lock_timeout bounds
// by default; the URL's own values, as parameters or in options, win.
func TestSessionBounds(t *testing.T) {
	url := pgURL(t)
	for _, c := range []struct{ query, statement, lock string }{
		{"", "5min", "10s"},
		{"&lock_timeout=3s&options=-c%20statement_timeout%3D7min", "7min", "3s"},
	} {
		s := openAt(t, url+c.query)
		var statement, lock string
		if err := s.db.QueryRowContext(context.Background(), `SELECT current_setting('statement_timeout'), current_setting('lock_timeout')`).Scan(&statement, &lock); err != nil {
			t.Fatal(err)
		}
		if statement != c.statement || lock != c.lock {
			t.Errorf("URL with %q: statement_timeout %s, lock_timeout %s; want %s, %s", c.query, statement, lock, c.statement, c.lock)
		}
	}
}

// TestOpenWhileAHostHoldsTheMigrationLock (issue 39 item 5): with the migration lock held by
// another session (a host frozen mid-migration), opening the store ends within OpenTimeout
// naming the migration lock, instead of waiting for it forever.
func TestOpenWhileAHostHoldsTheMigrationLock(t *testing.T) {
	url := pgURL(t)
	openAt(t, url).Close()
	ctx := context.Background()
	holder, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	conn, err := holder.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, int64(migrationLockKey)); err != nil {
		t.Fatal(err)
	}
	defer func(d time.Duration) { OpenTimeout = d }(OpenTimeout)
	OpenTimeout = 3 * time.Second
	start := time.Now()
	s, err := Open(ctx, url)
	if err == nil {
		s.Close()
	}
	if took := time.Since(start); took > OpenTimeout+2*time.Second || !strings.Contains(fmt.Sprint(err), "migration lock") {
		t.Errorf("open with the migration lock held: %v after %s, want an error naming the migration lock within %s", err, took, OpenTimeout)
	}
}
