package store

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestExportVideoCache: an export whose captures hold more distinct videos
// than ExportVideoCache, revisiting them after the caches were emptied,
// gives every row its own video's text and statistics, in Export's rows
// and in both writers' output.
func TestExportVideoCache(t *testing.T) {
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		n := ExportVideoCache + 500
		exec := func(q string, args ...any) {
			t.Helper()
			if _, err := s.db.ExecContext(ctx, q, args...); err != nil {
				t.Fatal(err)
			}
		}
		exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1)
INSERT INTO videos (rowid, id, title, description, channel_title, tags, first_seen_at)
SELECT i, 'v' || i, 'title ' || i, 'line one of ' || i || ?2 || 'line two "quoted"', 'channel ' || i,
       'tag' || i || ?2 || 'x', '2025-01-01T00:00:00.000000Z' FROM n`, n, "\n")
		exec(`INSERT INTO runs (id, region, started_at, outcome) VALUES (1, 'US', '2025-01-01T00:00:00.000000Z', 'success'),
(2, 'US', '2025-01-02T00:00:00.000000Z', 'success'), (3, 'US', '2025-01-03T00:00:00.000000Z', 'success')`)
		// Three captures: videos 1..n, then n..1, then every 7th; the view
		// count encodes capture and video.
		for c, order := range []func(i int) int{func(i int) int { return i }, func(i int) int { return n + 1 - i },
			func(i int) int { return i*7%n + 1 }} {
			exec(fmt.Sprintf(`INSERT INTO captures (id, run_id, region, kind, query, captured_at, complete)
VALUES (%d, %d, 'US', 'chart', '', '2025-01-0%dT00:00:00.000000Z', 1)`, c+1, c+1, c+1))
			page, zero := make([]Video, n), int64(0)
			for i := range page {
				v := order(i + 1)
				views := int64((c+1)*1000000 + v)
				page[i] = Video{ID: fmt.Sprint("v", v), Views: &views, Comments: &zero}
			}
			p := Snapshot{RunID: int64(c + 1), Region: "US", Kind: KindChart, FirstRank: 1, Videos: page}
			if err := s.withTx(ctx, func(tx *sql.Tx) error { _, err := s.execStmts(ctx, tx, s.d.entries(p)); return err }); err != nil {
				t.Fatal(err)
			}
		}
		// want is a row's text for video id; its last field, the view count
		// mod 10^6, must be the video's number too.
		want := func(id string) string {
			k := strings.TrimPrefix(id, "v")
			return fmt.Sprintf("title %s|line one of %s\nline two \"quoted\"|channel %s|tag%s\nx|%s", k, k, k, k, k)
		}
		var jsonl, csvOut bytes.Buffer
		jw, err := NewExportWriter(bufio.NewWriter(&jsonl), ExportFormat{Format: "jsonl"})
		if err != nil {
			t.Fatal(err)
		}
		cw, err := NewExportWriter(&csvOut, ExportFormat{Format: "csv", Layout: LayoutTrendingDaily})
		if err != nil {
			t.Fatal(err)
		}
		rows := 0
		err = s.Export(ctx, ExportQuery{}, func(r *ExportRow) error {
			rows++
			got := fmt.Sprintf("%s|%s|%s|%s|%d", r.Title, r.Description, r.ChannelTitle, r.Tags, r.Views.Int64%1000000)
			if w := want(r.VideoID); got != w || r.Likes.Valid {
				return fmt.Errorf("capture %d rank %d: %q, likes %v; want %q, likes null", r.CaptureID, r.Rank, got, r.Likes, w)
			}
			if err := jw.Row(r); err != nil {
				return err
			}
			return cw.Row(r)
		})
		if err == nil {
			err = jw.Flush()
		}
		if err == nil {
			err = cw.Flush()
		}
		if err != nil {
			t.Fatal(err)
		}
		if wantRows := 3 * n; rows != wantRows {
			t.Fatalf("%d rows, want %d", rows, wantRows)
		}
		lines := strings.Split(strings.TrimSuffix(jsonl.String(), "\n"), "\n")
		for i, line := range lines {
			var o struct {
				VideoID     string   `json:"video_id"`
				Title       string   `json:"title"`
				Description string   `json:"description"`
				Channel     string   `json:"channel_title"`
				Tags        []string `json:"tags"`
				Views       int64    `json:"view_count"`
				Likes       *int64   `json:"like_count"`
			}
			if err := json.Unmarshal([]byte(line), &o); err != nil {
				t.Fatalf("line %d: %v: %s", i+1, err, line)
			}
			got := fmt.Sprintf("%s|%s|%s|%s|%d", o.Title, o.Description, o.Channel, strings.Join(o.Tags, "\n"), o.Views%1000000)
			if w := want(o.VideoID); got != w || o.Likes != nil {
				t.Fatalf("JSON line %d: %q, likes %v; want %q, null", i+1, got, o.Likes, w)
			}
		}
		if len(lines) != rows || strings.Count(csvOut.String(), "title ") != rows {
			t.Fatalf("%d JSON lines and %d CSV titles for %d rows", len(lines), strings.Count(csvOut.String(), "title "), rows)
		}
	})
}

// TestConnectionPragmas (SQLite only): read-only connections map the database (ReadOnlyMmapBytes),
// read-write ones have a page cache of WriterCacheKiB; Export turns the map off and sets its own
// cache on its connection, and restores both before the connection returns to the pool, as Prune
// restores the cache it raised.
func TestConnectionPragmas(t *testing.T) {
	s, path := openTest(t)
	ro, err := OpenReadOnly(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	for _, c := range []struct {
		s      *Store
		pragma string
		want   int64
	}{{ro, "mmap_size", ReadOnlyMmapBytes}, {s, "cache_size", -WriterCacheKiB}} {
		c.s.db.SetMaxOpenConns(1) // Export's connection is the one checked below
		if got := pragmaValue(t, c.s, c.pragma); got != c.want {
			t.Fatalf("%s %d, want %d", c.pragma, got, c.want)
		}
		if err := c.s.Export(context.Background(), ExportQuery{}, func(*ExportRow) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if got := pragmaValue(t, c.s, c.pragma); got != c.want {
			t.Fatalf("after Export: %s %d, want %d restored", c.pragma, got, c.want)
		}
	}
	saveRun(t, s, "US", time.Now().Add(-time.Hour), testVideos("p", 2))
	if _, err := s.Prune(context.Background(), time.Now(), false); err != nil {
		t.Fatal(err)
	}
	if got := pragmaValue(t, s, "cache_size"); got != -WriterCacheKiB {
		t.Fatalf("after Prune: cache_size %d, want %d restored", got, -WriterCacheKiB)
	}
}

// pragmaValue is the value of PRAGMA name on a connection of s.
func pragmaValue(t *testing.T, s *Store, name string) (n int64) {
	t.Helper()
	if err := s.db.QueryRow("PRAGMA " + name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
