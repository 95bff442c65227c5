package store

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/pgtest"
)

// openTest opens a fresh store in a temp dir and closes it at cleanup.
func openTest(t testing.TB) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sub", "trendfetch.db")
	return openAt(t, path), path
}

// databases maps each store a test opened to its database setting (a file
// path or a PostgreSQL URL), so reopen can open another handle on it.
var databases sync.Map

// openAt opens database for writing, fails t on error and closes the store
// at cleanup.
func openAt(t testing.TB, database string) *Store {
	t.Helper()
	s, err := Open(context.Background(), database)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	databases.Store(s, database)
	t.Cleanup(func() {
		databases.Delete(s)
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// database is the database setting s was opened with (by openAt).
func database(t testing.TB, s *Store) string {
	t.Helper()
	d, ok := databases.Load(s)
	if !ok {
		t.Fatal("store not opened by openAt")
	}
	return d.(string)
}

// reopen opens another handle on s's database, as another process or
// host would, and closes it at cleanup.
func reopen(t testing.TB, s *Store) *Store {
	t.Helper()
	return openAt(t, database(t, s))
}

// reopenReadOnly is reopen through OpenReadOnly.
func reopenReadOnly(t testing.TB, s *Store) *Store {
	t.Helper()
	r, err := OpenReadOnly(context.Background(), database(t, s))
	if err != nil {
		t.Fatalf("OpenReadOnly: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func i64(v int64) *int64 { return &v }

// testVideos returns n videos with ids prefix-000 ... and distinct text.
func testVideos(prefix string, n int) []Video {
	vs := make([]Video, n)
	for i := range vs {
		vs[i] = Video{
			ID:           fmt.Sprintf("%s-%03d", prefix, i),
			Title:        fmt.Sprintf("Video %s number %d", prefix, i),
			Description:  fmt.Sprintf("Description of %s %d with some words", prefix, i),
			ChannelID:    "UC" + prefix,
			ChannelTitle: "Channel " + prefix,
			CategoryID:   "10",
			Tags:         []string{"tag" + prefix, fmt.Sprintf("n%d", i)},
			PublishedAt:  time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
			Duration:     "PT4M13S",
			Views:        i64(int64(1000 + i)),
			Likes:        i64(int64(10 + i)),
			ThumbnailURL: "https://i.ytimg.com/vi/" + prefix + "/default.jpg",
		}
	}
	return vs
}

// saveRun saves vs as the first page of a chart of region captured at at, in a run of its own,
// and fails the test on error.
func saveRun(t testing.TB, s *Store, region string, at time.Time, vs []Video) {
	t.Helper()
	if err := s.SaveSnapshot(context.Background(), Snapshot{RunID: startRun(t, s, region), Region: region, FirstRank: 1, Videos: vs, At: at}); err != nil {
		t.Fatal(err)
	}
}

// setSearchCandidates sets searchCandidates to n until the test ends.
func setSearchCandidates(t testing.TB, n int) {
	old := searchCandidates
	t.Cleanup(func() { searchCandidates = old })
	searchCandidates = n
}

// startRun starts a run in region and fails the test on error.
func startRun(t testing.TB, s *Store, region string) int64 {
	t.Helper()
	id, err := s.StartRun(context.Background(), Run{Credential: "default", Region: region, PID: 42, Host: "h"})
	if err != nil {
		t.Fatalf("StartRun: %v", err)
	}
	return id
}

// ftsIntegrity checks the search indexes against the videos' text
// (SQLite: FTS5's integrity-check; PostgreSQL: Check).
func ftsIntegrity(t testing.TB, s *Store) {
	t.Helper()
	if s.Engine() == PostgreSQL {
		if err := s.Check(context.Background()); err != nil {
			t.Fatal(err)
		}
		return
	}
	if _, err := s.db.Exec(`INSERT INTO videos_fts (videos_fts, rank) VALUES ('integrity-check', 1)`); err != nil {
		t.Fatalf("fts integrity-check: %v", err)
	}
}

// pg is the package's PostgreSQL server, stopped by TestMain: when
// benchmarks run (-test.bench), durable, as a deployment starts it (issue
// 42: figures against fsync and synchronous_commit on); else fsync off.
var pg = pgtest.Shared{Options: func() pgtest.Options {
	bench := flag.Lookup("test.bench")
	return pgtest.Options{Durable: bench != nil && bench.Value.String() != ""}
}}

// pgURL returns the URL of a fresh, empty database on the package's
// server (pgtest.Shared.Database: skipped under -short).
func pgURL(t testing.TB) string {
	t.Helper()
	return pg.Database(t)
}

// openPG opens a fresh PostgreSQL store in a database of its own.
func openPG(t testing.TB) *Store {
	t.Helper()
	return openAt(t, pgURL(t))
}

// forEachDatabase runs body as one subtest per store engine, each with the
// setting of a fresh database that does not exist yet (a file path) or is
// empty (a PostgreSQL URL).
func forEachDatabase(t *testing.T, body func(t *testing.T, database string)) {
	t.Run("sqlite", func(t *testing.T) { body(t, filepath.Join(t.TempDir(), "sub", "trendfetch.db")) })
	t.Run("postgres", func(t *testing.T) { body(t, pgURL(t)) })
}

// forEachEngine runs body as one subtest per store engine, each on a fresh
// store: the behaviour suite (docs/design.md §10a).
func forEachEngine(t *testing.T, body func(t *testing.T, s *Store)) {
	forEachDatabase(t, func(t *testing.T, database string) { body(t, openAt(t, database)) })
}

// exportAll writes every capture of s in format f and returns the bytes.
func exportAll(t testing.TB, s *Store, f ExportFormat) []byte {
	t.Helper()
	var b bytes.Buffer
	w, err := NewExportWriter(&b, f)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Export(context.Background(), ExportQuery{}, w.Row); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
