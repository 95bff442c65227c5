package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

// entryStats returns "rank:id:views:likes:comments" of every entry of the
// capture (runID, region, kind, query), in rank order, and its complete flag.
func entryStats(t *testing.T, s *Store, runID int64, region, kind, query string) ([]string, bool) {
	t.Helper()
	var complete bool
	if err := s.db.QueryRow(`SELECT complete FROM captures WHERE run_id = ? AND region = ? AND kind = ? AND query = ?`,
		runID, region, kind, query).Scan(&complete); err != nil {
		t.Fatalf("capture: %v", err)
	}
	rows, err := s.db.Query(`
SELECT e.rank || ':' || v.id || ':' || coalesce(CAST(e.view_count AS TEXT), 'null') || ':' || coalesce(CAST(e.like_count AS TEXT), 'null') || ':' || coalesce(CAST(e.comment_count AS TEXT), 'null')
FROM captures c JOIN entries e ON e.capture_id = c.id JOIN videos v ON v.rowid = e.video
WHERE c.run_id = ? AND c.region = ? AND c.kind = ? AND c.query = ? ORDER BY e.rank`, runID, region, kind, query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var e string
		if err := rows.Scan(&e); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out, complete
}

// TestCaptureKeepsStatistics: each capture keeps the statistics of its
// moment; a later capture of the same videos does not overwrite them; a
// capture is partial until CompleteCapture.
func TestCaptureKeepsStatistics(t *testing.T) {
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		vs := testVideos("a", 2)
		vs[1].Likes = nil // hidden likes
		day1 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		r1 := startRun(t, s, "US")
		if err := s.SaveSnapshot(ctx, Snapshot{RunID: r1, Region: "US", FirstRank: 1, Videos: vs[:1], At: day1}); err != nil {
			t.Fatal(err)
		}
		if got, complete := entryStats(t, s, r1, "US", KindChart, ""); complete || len(got) != 1 {
			t.Fatalf("after page 1: %v complete=%v", got, complete)
		}
		if err := s.SaveSnapshot(ctx, Snapshot{RunID: r1, Region: "US", FirstRank: 2, Videos: vs[1:], At: day1}); err != nil {
			t.Fatal(err)
		}
		if err := s.CompleteCapture(ctx, r1, "US", KindChart, "", day1); err != nil {
			t.Fatal(err)
		}
		r2 := startRun(t, s, "US")
		vs[0].Views, vs[1].Views = i64(5000), i64(6000)
		if err := s.SaveSnapshot(ctx, Snapshot{RunID: r2, Region: "US", FirstRank: 1, Videos: []Video{vs[1], vs[0]}, At: day1.Add(24 * time.Hour)}); err != nil {
			t.Fatal(err)
		}
		got1, c1 := entryStats(t, s, r1, "US", KindChart, "")
		got2, c2 := entryStats(t, s, r2, "US", KindChart, "")
		want1 := []string{"1:a-000:1000:10:null", "2:a-001:1001:null:null"}
		want2 := []string{"1:a-001:6000:null:null", "2:a-000:5000:10:null"}
		if !c1 || c2 || !equalStrings(got1, want1) || !equalStrings(got2, want2) {
			t.Errorf("run 1: %v complete=%v; run 2: %v complete=%v", got1, c1, got2, c2)
		}
		// An empty list is a complete, empty capture.
		if err := s.CompleteCapture(ctx, r2, "US", KindSearch, "nothing", time.Time{}); err != nil {
			t.Fatal(err)
		}
		if got, c := entryStats(t, s, r2, "US", KindSearch, "nothing"); len(got) != 0 || !c {
			t.Errorf("empty capture: %v complete=%v", got, c)
		}
		if c, es, err := s.CaptureAt(ctx, CaptureQuery{Region: "US", Kind: KindSearch, Query: "nothing"}); err != nil || !c.Complete || es == nil || len(es) != 0 {
			t.Errorf("CaptureAt of the empty capture: %+v, %d entries, %v", c, len(es), err)
		}
		if err := s.CompleteCapture(ctx, 999, "US", KindChart, "", time.Time{}); !errors.Is(err, ErrNotFound) {
			t.Errorf("unknown run: %v", err)
		}
		if err := s.Check(ctx); err != nil {
			t.Error(err)
		}
	})
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
