package store

import (
	"context"
	"testing"
	"time"
)

// TestPrune: captures and samples older than the cut-off go with the
// videos only they referenced (FTS rows included); the dry run reports
// exactly what the prune then removes; both FTS indexes and the foreign
// keys check out afterwards.
func TestPrune(t *testing.T) {
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		old, recent := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
		oldOnly, shared, fresh := testVideos("old", 3), testVideos("shared", 2), testVideos("fresh", 2)
		r1 := startRun(t, s, "US")
		if err := s.SaveSnapshot(ctx, Snapshot{RunID: r1, Region: "US", FirstRank: 1, Videos: append(append([]Video{}, oldOnly...), shared...), At: old}); err != nil {
			t.Fatal(err)
		}
		if err := s.SaveSnapshot(ctx, Snapshot{RunID: r1, Region: "US", Kind: KindSearch, Query: "q", FirstRank: 1, Videos: oldOnly[:1], At: old}); err != nil {
			t.Fatal(err)
		}
		r2 := startRun(t, s, "US")
		if err := s.SaveSnapshot(ctx, Snapshot{RunID: r2, Region: "US", FirstRank: 1, Videos: append(append([]Video{}, shared...), fresh...), At: recent}); err != nil {
			t.Fatal(err)
		}
		// oldOnly[2] keeps a recent sample, so it stays; oldOnly[1] an old one.
		if _, err := s.SaveSamples(ctx, []Sample{{VideoID: oldOnly[2].ID, Views: i64(5)}}, recent); err != nil {
			t.Fatal(err)
		}
		if _, err := s.SaveSamples(ctx, []Sample{{VideoID: oldOnly[1].ID, Views: i64(4)}}, old); err != nil {
			t.Fatal(err)
		}
		cut := old.Add(24 * time.Hour)
		want := PruneReport{Captures: 2, Entries: 6, Samples: 1, Videos: 2}
		dry, err := s.Prune(ctx, cut, true)
		if err != nil || dry != want {
			t.Fatalf("dry run: %+v, %v; want %+v", dry, err, want)
		}
		if n, _ := s.CountVideos(ctx); n != 7 {
			t.Fatalf("dry run removed videos: %d left", n)
		}
		got, err := s.Prune(ctx, cut, false)
		if err != nil || got != want {
			t.Fatalf("prune: %+v, %v; want %+v", got, err, want)
		}
		if n, _ := s.CountVideos(ctx); n != 5 {
			t.Errorf("%d videos left, want 5", n)
		}
		for _, id := range []string{oldOnly[0].ID, oldOnly[1].ID} {
			if _, err := s.Video(ctx, id); err == nil {
				t.Errorf("%s kept", id)
			}
		}
		if hits, err := s.Search(ctx, SearchQuery{Text: "old"}); err != nil || len(hits) != 1 || hits[0].VideoID != oldOnly[2].ID {
			t.Errorf("search after prune: %+v, %v", hits, err)
		}
		ftsIntegrity(t, s)
		if s.Engine() != PostgreSQL { // SQLite's trigram index
			if _, err := s.db.Exec(`INSERT INTO videos_tri (videos_tri, rank) VALUES ('integrity-check', 1)`); err != nil {
				t.Errorf("trigram integrity-check: %v", err)
			}
		}
		if err := s.Check(ctx); err != nil {
			t.Error(err)
		}
		if again, err := s.Prune(ctx, cut, false); err != nil || again != (PruneReport{}) {
			t.Errorf("second prune: %+v, %v", again, err)
		}
		if due, err := s.PruneDue(ctx, cut); err != nil || due {
			t.Errorf("PruneDue after prune: %v %v", due, err)
		}
	})
}
