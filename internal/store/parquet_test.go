package store

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/store/storetest"
)

// TestParquetReadByDuckDB: the Parquet export, read back by DuckDB (a
// reader trendfetch did not write), has typed columns (BIGINT counts, null
// when the API omitted them; UTC timestamps; tags a list of strings), the
// text of each capture, and one row per entry.
func TestParquetReadByDuckDB(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	vs := testVideos("q", 3)
	vs[1].Likes = nil // hidden likes: null
	vs[2].Tags = nil
	at := time.Date(2026, 11, 24, 8, 30, 0, 123456000, time.UTC)
	if err := s.SavePage(ctx, startRun(t, s, "US"), "US", 1, vs, at); err != nil {
		t.Fatal(err)
	}
	vs[0].Title = "Edited title"
	if err := s.SavePage(ctx, startRun(t, s, "GB"), "GB", 1, vs, at.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "all.parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewExportWriter(f, ExportFormat{Format: "parquet"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Export(ctx, ExportQuery{}, w.Row); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	src := "read_parquet('" + path + "')"
	types := storetest.DuckDB(t, "SELECT column_name || ' ' || column_type FROM (DESCRIBE SELECT * FROM "+src+")")
	for _, want := range []string{"region VARCHAR", "captured_at TIMESTAMP WITH TIME ZONE", "complete BOOLEAN", "rank BIGINT",
		"video_id VARCHAR", "tags VARCHAR[]", "published_at TIMESTAMP WITH TIME ZONE", "view_count BIGINT", "like_count BIGINT",
		"comment_count BIGINT", "description VARCHAR"} {
		if !strings.Contains(types, `["`+want+`"]`) {
			t.Errorf("DuckDB sees no column %q in\n%s", want, types)
		}
	}
	got := storetest.DuckDB(t, "SET TimeZone = 'UTC'; SELECT region, strftime(captured_at, '%Y-%m-%dT%H:%M:%S.%fZ'), rank, video_id, title, tags, view_count, like_count, comment_count, "+
		"strftime(published_at, '%Y-%m-%dT%H:%M:%SZ') FROM "+src+" ORDER BY captured_at, rank")
	want := `["US","2026-11-24T08:30:00.123456Z","1","q-000","Video q number 0",["tagq","n0"],"1000","10",null,"2026-01-02T03:04:05Z"]
["US","2026-11-24T08:30:00.123456Z","2","q-001","Video q number 1",["tagq","n1"],"1001",null,null,"2026-01-02T03:04:05Z"]
["US","2026-11-24T08:30:00.123456Z","3","q-002","Video q number 2",[],"1002","12",null,"2026-01-02T03:04:05Z"]
["GB","2026-11-24T09:30:00.123456Z","1","q-000","Edited title",["tagq","n0"],"1000","10",null,"2026-01-02T03:04:05Z"]
["GB","2026-11-24T09:30:00.123456Z","2","q-001","Video q number 1",["tagq","n1"],"1001",null,null,"2026-01-02T03:04:05Z"]
["GB","2026-11-24T09:30:00.123456Z","3","q-002","Video q number 2",[],"1002","12",null,"2026-01-02T03:04:05Z"]
`
	if got != want {
		t.Errorf("DuckDB reads:\n%s\nwant\n%s", got, want)
	}
}
