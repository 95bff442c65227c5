package store

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// exportTitles exports every capture and returns "day rank id title|tags|desc" lines.
func exportTitles(t *testing.T, s *Store) string {
	t.Helper()
	var b strings.Builder
	err := s.Export(context.Background(), ExportQuery{}, func(r *ExportRow) error {
		fmt.Fprintf(&b, "%s %d %s %s|%s|%s|%s\n", r.CapturedAt.Format(time.DateOnly), r.Rank, r.VideoID, r.Title,
			strings.ReplaceAll(r.Tags, "\n", ","), r.Description, r.ChannelTitle)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestTextAsCaptured: a video whose title (then tags, then nothing) changes
// between captures is exported with the text of each capture; unchanged
// text makes no new version; the current text stays in videos (search).
func TestTextAsCaptured(t *testing.T) {
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		day := func(d int) time.Time { return time.Date(2026, 3, d, 12, 0, 0, 0, time.UTC) }
		v := testVideos("a", 2)
		texts := []struct{ title, tags, desc string }{
			{"First title", "x", "line one\r\nline two"},
			{"Second title", "x", "line one\r\nline two"},
			{"Second title", "y", "line one\r\nline two"},
			{"Second title", "y", "line one\r\nline two"},
			{"First title", "y", "line one\r\nline two"}, // back to an old title: a new version
		}
		for i, x := range texts {
			v[0].Title, v[0].Tags, v[0].Description = x.title, []string{x.tags}, x.desc
			run := startRun(t, s, "US")
			if err := s.SaveSnapshot(ctx, Snapshot{RunID: run, Region: "US", FirstRank: 1, Videos: v, At: day(i + 1)}); err != nil {
				t.Fatal(err)
			}
		}
		got := exportTitles(t, s)
		var want strings.Builder
		for i, x := range texts {
			fmt.Fprintf(&want, "2026-03-%02d 1 a-000 %s|%s|%s|Channel a\n", i+1, x.title, x.tags, x.desc)
			fmt.Fprintf(&want, "2026-03-%02d 2 a-001 Video a number 1|taga,n1|Description of a 1 with some words|Channel a\n", i+1)
		}
		if got != want.String() {
			t.Errorf("export:\n got %s\nwant %s", got, want.String())
		}
		var versions, current int
		if err := s.db.QueryRow(`SELECT (SELECT count(*) FROM video_texts), (SELECT text_version FROM videos WHERE id = 'a-000')`).Scan(&versions, &current); err != nil {
			t.Fatal(err)
		}
		if versions != 3 || current != 3 {
			t.Errorf("%d stored old versions, current version %d; want 3 and 3 (4 distinct texts in 5 captures)", versions, current)
		}
		if hits := search(t, s, SearchQuery{Text: "first"}); len(hits) != 1 || hits[0].Title != "First title" {
			t.Errorf("search of the current title: %+v", hits)
		}
		if hits := search(t, s, SearchQuery{Text: "second"}); len(hits) != 0 {
			t.Errorf("search finds a superseded title: %+v", hits)
		}
		h, err := s.History(ctx, "a-000")
		if err != nil {
			t.Fatal(err)
		}
		var titles []string
		for _, c := range h.Titles {
			titles = append(titles, c.At.Format(time.DateOnly)+" "+c.Title)
		}
		if w := "2026-03-01 First title,2026-03-02 Second title,2026-03-05 First title"; strings.Join(titles, ",") != w {
			t.Errorf("title changes %q, want %q", strings.Join(titles, ","), w)
		}
		for d, want := range map[int]string{1: "First title", 2: "Second title", 4: "Second title", 5: "First title"} {
			_, es, err := s.CaptureAt(ctx, CaptureQuery{Region: "US", At: day(d), Partial: true})
			if err != nil || len(es) != 2 || es[0].Title != want {
				t.Errorf("chart of day %d: %+v, %v; want %q first", d, es, err, want)
			}
		}
		// Pruning days 1-2 removes the two versions only they referred to.
		dry, err := s.Prune(ctx, day(3), true)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := s.Prune(ctx, day(3), false)
		if err != nil || rep.Texts != 2 || dry.Texts != 2 || rep.Captures != 2 {
			t.Errorf("prune of days 1-2: %+v (dry run %+v), %v; want 2 text versions", rep, dry, err)
		}
		if got, want := exportTitles(t, s), want.String()[strings.Index(want.String(), "2026-03-03"):]; got != want {
			t.Errorf("export after prune:\n got %s\nwant %s", got, want)
		}
		ftsIntegrity(t, s)
	})
}

// TestMigrateTextVersions (SQLite only: it migrates an old release's
// file): captures stored before text versions existed
// refer to the video's current text (version 0); a change after the
// migration keeps it for them.
func TestMigrateTextVersions(t *testing.T) {
	ctx := context.Background()
	names, err := fs.ReadDir(migrationsFS, ".")
	if err != nil {
		t.Fatal(err)
	}
	n := -1
	for i, m := range names {
		if strings.HasSuffix(m.Name(), "_text_versions.sql") {
			n = i
		}
	}
	if n < 0 {
		t.Fatal("no text_versions migration")
	}
	path := filepath.Join(t.TempDir(), "old.db")
	db := openAtVersion(t, path, n)
	for _, q := range []string{
		`INSERT INTO runs (id, region, started_at, outcome) VALUES (1, 'US', '2026-01-01T00:00:00.000000Z', 'success')`,
		`INSERT INTO videos (id, title, tags, first_seen_at) VALUES ('a', 'Old title', 'old', '2026-01-01T00:00:00.000000Z')`,
		`INSERT INTO video_stats (video_rowid, view_count, last_seen_at) SELECT rowid, 7, '2026-01-01T00:00:00.000000Z' FROM videos`,
		`INSERT INTO captures (id, run_id, region, kind, captured_at, complete) VALUES (1, 1, 'US', 'chart', '2026-01-01T00:00:00.000000Z', 1)`,
		`INSERT INTO entries (capture_id, rank, video, view_count) SELECT 1, 1, rowid, 7 FROM videos`,
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
	run := startRun(t, s, "US")
	if err := s.SaveSnapshot(ctx, Snapshot{RunID: run, Region: "US", FirstRank: 1, Videos: []Video{{ID: "a", Title: "New title", Tags: []string{"new"}}}, At: time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)}); err != nil {
		t.Fatal(err)
	}
	got := exportTitles(t, s)
	if want := "2026-01-01 1 a Old title|old||\n2026-01-02 1 a New title|new||\n"; got != want {
		t.Errorf("export after migration:\n got %s\nwant %s", got, want)
	}
	if err := s.Check(ctx); err != nil {
		t.Error(err)
	}
	// It held captures before store.policy existed: never pruned by the new default.
	if legacy, err := s.LegacyData(ctx); err != nil || !legacy {
		t.Errorf("LegacyData of a database with older captures: %v, %v", legacy, err)
	}
	fresh, _ := openTest(t)
	if legacy, err := fresh.LegacyData(ctx); err != nil || legacy {
		t.Errorf("LegacyData of a new database: %v, %v", legacy, err)
	}
}
