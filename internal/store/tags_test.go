package store

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
)

// TestTagsRoundTrip: any tag text (a newline, a backslash, the two
// characters \n, an empty tag) comes back exactly from the store, JSON
// Lines, Parquet and both CSV layouts (whose tag separator '|' is the one
// text they cannot hold).
func TestTagsRoundTrip(t *testing.T) {
	want := []string{"line\nbreak", `back\slash`, `literal\n`, "", `\\n`, "plain tag"}
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		v := testVideos("tags", 1)[0]
		v.Tags = want
		run := startRun(t, s, "US")
		at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
		if err := s.SaveSnapshot(ctx, Snapshot{RunID: run, Region: "US", FirstRank: 1, Videos: []Video{v}, At: at}); err != nil {
			t.Fatal(err)
		}
		h, err := s.History(ctx, v.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(h.Video.Tags, want) {
			t.Errorf("stored tags %q, want %q", h.Video.Tags, want)
		}
		var row struct{ Tags []string }
		if err := json.Unmarshal(exportAll(t, s, ExportFormat{Format: "jsonl"}), &row); err != nil || !slices.Equal(row.Tags, want) {
			t.Errorf("JSON Lines tags %q (%v), want %q", row.Tags, err, want)
		}
		pq := exportAll(t, s, ExportFormat{Format: "parquet"})
		rows, err := parquet.Read[ParquetRow](bytes.NewReader(pq), int64(len(pq)))
		if err != nil || len(rows) != 1 || !slices.Equal(rows[0].Tags, want) {
			t.Errorf("Parquet tags %+v (%v), want %q", rows, err, want)
		}
		for layout, split := range map[string]func(string) []string{
			LayoutTrendingDaily: func(c string) []string { return strings.Split(c, "|") },
			LayoutYoutubeNew:    func(c string) []string { return strings.Split(strings.Trim(c, `"`), `"|"`) },
		} {
			recs, err := csv.NewReader(bytes.NewReader(exportAll(t, s, ExportFormat{Format: "csv", Layout: layout}))).ReadAll()
			if err != nil || len(recs) != 2 {
				t.Fatalf("%s: %d records, %v", layout, len(recs), err)
			}
			col := slices.Index(recs[0], "tags")
			if got := split(recs[1][col]); !slices.Equal(got, want) {
				t.Errorf("%s tags %q, want %q", layout, got, want)
			}
		}
	})
}

// TestMigrateTagsEscaped (SQLite only: it migrates an old release's
// file): tags stored before tags were escaped (a backslash
// written as itself) read back the same after the migration.
func TestMigrateTagsEscaped(t *testing.T) {
	entries, err := fs.ReadDir(migrationsFS, ".")
	if err != nil {
		t.Fatal(err)
	}
	before := slices.IndexFunc(entries, func(e fs.DirEntry) bool { return strings.HasSuffix(e.Name(), "_tags_escaped.sql") })
	if before < 0 {
		t.Fatal("no *_tags_escaped.sql migration")
	}
	path := filepath.Join(t.TempDir(), "old.db")
	db := openAtVersion(t, path, before)
	if _, err := db.Exec(`INSERT INTO videos (id, title, first_seen_at, tags) VALUES ('old0000000a', 't', '2026-01-01T00:00:00.000000Z', 'a\b' || char(10) || 'c\n')`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	v, err := s.Video(context.Background(), "old0000000a")
	if want := []string{`a\b`, `c\n`}; err != nil || !slices.Equal(v.Tags, want) {
		t.Fatalf("tags %q (%v), want %q", v.Tags, err, want)
	}
}
