package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/trendfetch/trendfetch/internal/store/storetest"
)

// TestParquetReadByDuckDB: the Parquet export, read back by DuckDB (a
// reader trendfetch did not write), has typed columns (BIGINT counts, null
// when the API omitted them; UTC timestamps; tags a list of strings), the
// text of each capture, and one row per entry.
func TestParquetReadByDuckDB(t *testing.T) {
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		vs := testVideos("q", 3)
		vs[1].Likes = nil // hidden likes: null
		vs[2].Tags = nil
		at := time.Date(2026, 11, 24, 8, 30, 0, 123456000, time.UTC)
		if err := s.SaveSnapshot(ctx, Snapshot{RunID: startRun(t, s, "US"), Region: "US", FirstRank: 1, Videos: vs, At: at}); err != nil {
			t.Fatal(err)
		}
		vs[0].Title = "Edited title"
		if err := s.SaveSnapshot(ctx, Snapshot{RunID: startRun(t, s, "GB"), Region: "GB", FirstRank: 1, Videos: vs, At: at.Add(time.Hour)}); err != nil {
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
		// Free text has no min/max (newParquetWriter); keys and counts do.
		stats := storetest.DuckDB(t, "SELECT path_in_schema, stats_min_value IS NOT NULL FROM parquet_metadata('"+path+"') "+
			"WHERE path_in_schema IN ('region', 'video_id', 'view_count', 'title', 'description') ORDER BY ALL")
		if want := "[\"description\",false]\n[\"region\",true]\n[\"title\",false]\n[\"video_id\",true]\n[\"view_count\",true]\n"; stats != want {
			t.Errorf("column statistics (path, has min):\n%s\nwant\n%s", stats, want)
		}
	})
}

// TestExportGroupBy: ExportQuery.GroupBy streams region by region (by
// code) or day by day, each group's captures oldest first; without it all
// captures are in time order. An unknown key is an error.
func TestExportGroupBy(t *testing.T) {
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		at := time.Date(2026, 11, 24, 22, 0, 0, 0, time.UTC)
		for i, region := range []string{"US", "GB", "US", "GB", "JP"} { // hours 22, 23, 24, 25, 26
			if err := s.SaveSnapshot(ctx, Snapshot{RunID: startRun(t, s, region), Region: region, FirstRank: 1, Videos: testVideos("r", 2), At: at.Add(time.Duration(i) * time.Hour)}); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range []struct {
			group []string
			want  string
		}{
			{nil, "US22 US22 GB23 GB23 US24 US24 GB25 GB25 JP26 JP26 "},
			{[]string{"region"}, "GB23 GB23 GB25 GB25 JP26 JP26 US22 US22 US24 US24 "},
			{[]string{"date", "region"}, "GB23 GB23 US22 US22 GB25 GB25 JP26 JP26 US24 US24 "},
		} {
			var got strings.Builder
			if err := s.Export(ctx, ExportQuery{GroupBy: c.group}, func(r *ExportRow) error {
				fmt.Fprintf(&got, "%s%d ", r.Region, 22+r.CapturedAt.Sub(at)/time.Hour)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if got.String() != c.want {
				t.Errorf("GroupBy %v: rows %q, want %q", c.group, got.String(), c.want)
			}
		}
		if err := s.Export(ctx, ExportQuery{GroupBy: []string{"week"}}, func(*ExportRow) error { return nil }); err == nil {
			t.Error("GroupBy week: no error")
		}
	})
}

// TestParquetFiles: files written one after the other (as a partitioned
// export does) each hold their own rows, counts and text, over several
// batches and row groups, even when a VideoKey means another text in the
// next file, and name every column chunk in their footer.
func TestParquetFiles(t *testing.T) {
	dir := t.TempDir()
	at := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	for f, n := range []int{ParquetRowGroup + 2*parquetBatch + 7, 300} {
		out, err := os.Create(filepath.Join(dir, fmt.Sprintf("f%d.parquet", f)))
		if err != nil {
			t.Fatal(err)
		}
		w, err := NewExportWriter(out, ExportFormat{Format: "parquet"})
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			r := &ExportRow{Region: "US", CapturedAt: at, Rank: i + 1, VideoKey: int64(1 + i%50), VideoID: fmt.Sprintf("v%d", i%50),
				Description: fmt.Sprintf("file %d video %d", f, i%50), Tags: "a\nb",
				Views: sql.NullInt64{Int64: int64(i), Valid: true}, Likes: sql.NullInt64{Int64: int64(2 * i), Valid: i%3 != 0}}
			if err := w.Row(r); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := out.Close(); err != nil {
			t.Fatal(err)
		}
	}
	got := storetest.DuckDB(t, "SELECT filename[-10:], count(*), sum(view_count), count(like_count), sum(like_count), count(comment_count), "+
		"count(DISTINCT description), min(description), sum(len(tags)) FROM read_parquet('"+dir+"/*.parquet', filename = true) GROUP BY ALL ORDER BY ALL")
	sum := func(n int, keep func(int) bool) (c, s int) {
		for i := range n {
			if keep(i) {
				c, s = c+1, s+i
			}
		}
		return c, s
	}
	var want strings.Builder
	for f, n := range []int{ParquetRowGroup + 2*parquetBatch + 7, 300} {
		_, views := sum(n, func(int) bool { return true })
		likes, likeSum := sum(n, func(i int) bool { return i%3 != 0 })
		fmt.Fprintf(&want, "[\"f%d.parquet\",\"%d\",\"%d\",\"%d\",\"%d\",\"0\",\"50\",\"file %d video 0\",\"%d\"]\n", f, n, views, likes, 2*likeSum, f, 2*n)
	}
	if got != want.String() {
		t.Errorf("DuckDB reads:\n%s\nwant\n%s", got, want.String())
	}
	if got := storetest.DuckDB(t, "SELECT count(*) FILTER (path_in_schema = '') FROM parquet_metadata('"+dir+"/*.parquet')"); got != "[\"0\"]\n" {
		t.Errorf("column chunks without a path: %s", got)
	}
}

// TestParquetRowGroupPerRegion: a change of region ends the row group
// (its statistics then let readers skip other regions, its dictionaries
// hold one region's videos), unless the group is still small.
func TestParquetRowGroupPerRegion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.parquet")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewExportWriter(out, ExportFormat{Format: "parquet"})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []struct {
		region string
		n      int
	}{{"US", parquetMinGroup + 500}, {"GB", parquetMinGroup}, {"JP", 100}, {"FR", 10}, {"DE", 10}} {
		for i := range g.n {
			if err := w.Row(&ExportRow{Region: g.region, Rank: i + 1, VideoKey: 1, VideoID: "v"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	got := storetest.DuckDB(t, "SELECT row_group_num_rows, stats_min_value, stats_max_value FROM parquet_metadata('"+path+"') "+
		"WHERE path_in_schema = 'region' ORDER BY row_group_id")
	want := fmt.Sprintf("[\"%d\",\"US\",\"US\"]\n[\"%d\",\"GB\",\"GB\"]\n[\"120\",\"DE\",\"JP\"]\n", parquetMinGroup+500, parquetMinGroup)
	if got != want {
		t.Errorf("row groups (rows, min region, max region):\n%s\nwant\n%s", got, want)
	}
}

// TestExportMarksYouTubeChanges: a Parquet file's key-value metadata lists
// YouTube's changes between its first and last capture; every JSON Lines
// row names the change in effect at its capture.
func TestExportMarksYouTubeChanges(t *testing.T) {
	forEachEngine(t, testExportMarksYouTubeChanges)
}

func testExportMarksYouTubeChanges(t *testing.T, s *Store) {
	ctx := context.Background()
	vs := testVideos("y", 2)
	for _, at := range []time.Time{time.Date(2026, 8, 20, 0, 0, 0, 0, time.UTC), time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)} {
		if err := s.SaveSnapshot(ctx, Snapshot{RunID: startRun(t, s, "US"), Region: "US", FirstRank: 1, Videos: vs, At: at}); err != nil {
			t.Fatal(err)
		}
	}
	pq := exportAll(t, s, ExportFormat{Format: "parquet"})
	f, err := parquet.OpenFile(bytes.NewReader(pq), int64(len(pq)))
	if err != nil {
		t.Fatal(err)
	}
	var changes []Change
	v, ok := f.Lookup(ParquetChangesKey)
	if err := json.Unmarshal([]byte(v), &changes); !ok || err != nil || len(changes) != 1 || changes[0] != Changes[3] {
		t.Errorf("Parquet metadata %s = %q (%v), want [%+v]", ParquetChangesKey, v, err, Changes[3])
	}
	var seen []string
	for _, line := range strings.Split(strings.TrimSpace(string(exportAll(t, s, ExportFormat{Format: "jsonl"}))), "\n") {
		var row struct {
			YouTubeChange *string `json:"youtube_change"`
		}
		if err := json.Unmarshal([]byte(line), &row); err != nil || row.YouTubeChange == nil {
			t.Fatalf("row %s: %v", line, err)
		}
		seen = append(seen, *row.YouTubeChange)
	}
	if strings.Join(seen, " ") != "2025-07-21 2025-07-21 2026-08-27 2026-08-27" {
		t.Errorf("JSON Lines youtube_change %q, want 2025-07-21 before 2026-08-27 and 2026-08-27 after", seen)
	}
	// Parquet rows have the column too (issue 40 item 14).
	rows, err := parquet.Read[struct {
		YouTubeChange *string `parquet:"youtube_change,optional"`
	}](bytes.NewReader(pq), int64(len(pq)))
	seen = seen[:0]
	for _, r := range rows {
		if r.YouTubeChange == nil {
			seen = append(seen, "null")
		} else {
			seen = append(seen, *r.YouTubeChange)
		}
	}
	if err != nil || strings.Join(seen, " ") != "2025-07-21 2025-07-21 2026-08-27 2026-08-27" {
		t.Errorf("Parquet youtube_change %q (%v), want 2025-07-21 before 2026-08-27 and 2026-08-27 after", seen, err)
	}
}
