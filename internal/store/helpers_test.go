package store

import (
	"bytes"
	"context"
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
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s, path
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

// startRun starts a run in region and fails the test on error.
func startRun(t testing.TB, s *Store, region string) int64 {
	t.Helper()
	id, err := s.StartRun(context.Background(), Run{Credential: "default", Region: region, PID: 42, Host: "h"})
	if err != nil {
		t.Fatalf("StartRun: %v", err)
	}
	return id
}

// ftsIntegrity runs FTS5's integrity-check against the content table.
func ftsIntegrity(t testing.TB, s *Store) {
	t.Helper()
	if s.pg {
		// video_search holds every video's current text, as the
		// migration's functions derive it (the triggers kept it current).
		var stale int
		if err := s.db.QueryRow(`SELECT count(*) FROM videos v LEFT JOIN video_search x ON x.video_rowid = v.rowid
WHERE x.doc IS DISTINCT FROM search_doc(v.title, v.channel_title, v.tags, v.description)
   OR x.tri IS DISTINCT FROM search_fold(v.title || E'\n' || v.channel_title)`).Scan(&stale); err != nil || stale > 0 {
			t.Fatalf("video_search: %d videos not indexed as their text is (%v)", stale, err)
		}
		return
	}
	if _, err := s.db.Exec(`INSERT INTO videos_fts (videos_fts, rank) VALUES ('integrity-check', 1)`); err != nil {
		t.Fatalf("fts integrity-check: %v", err)
	}
}

// pg is the package's PostgreSQL server, started by the first test that
// needs it and stopped by TestMain.
var pg struct {
	once sync.Once
	srv  *pgtest.Server
	err  error
}

// openPG opens a fresh PostgreSQL store in a database of its own; without
// a server it skips t, or fails it under CI=true (pgtest.Require).
func openPG(t testing.TB) *Store {
	t.Helper()
	pg.once.Do(func() { pg.srv, pg.err = pgtest.Start() })
	url := pgtest.Require(t, pg.srv, pg.err).Database(t)
	s, err := Open(context.Background(), url)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// forEachEngine runs body as one subtest per store engine, each on a fresh
// store: the behaviour suite (docs/design.md §10a).
func forEachEngine(t *testing.T, body func(t *testing.T, s *Store)) {
	t.Run("sqlite", func(t *testing.T) {
		s, _ := openTest(t)
		body(t, s)
	})
	t.Run("postgres", func(t *testing.T) { body(t, openPG(t)) })
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
