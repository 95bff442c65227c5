package store

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestPrune: captures and samples older than the cut-off go with the
// videos only they referenced (FTS rows included); the dry run reports
// exactly what the prune then removes; both FTS indexes and the foreign
// keys check out afterwards, and SQLite's FTS5 automerge is back at 4.
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
			for _, fts := range []string{"videos_fts", "videos_tri"} {
				var v int
				if err := s.db.QueryRow(`SELECT v FROM ` + fts + `_config WHERE k = 'automerge'`).Scan(&v); err != nil || v != 4 {
					t.Errorf("%s automerge after prune: %d, %v; want 4 (held back by each batch, restored before it commits)", fts, v, err)
				}
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

// TestPruneBatches: a prune of more than pruneBatch captures and videos,
// old ones interleaved by id with recent ones (a capture's id need not
// follow its time), deletes every old one and nothing recent, batch after
// batch.
func TestPruneBatches(t *testing.T) {
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		old, recent := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
		const n = 2*pruneBatch + 50
		run := startRun(t, s, "US")
		vs := testVideos("b", 2*n)
		for i := range 2 * n {
			at := old
			if i%2 == 1 {
				at = recent
			}
			q := Snapshot{RunID: run, Region: "US", Kind: KindSearch, Query: fmt.Sprint(i), FirstRank: 1, Videos: vs[i : i+1], At: at}
			if err := s.SaveSnapshot(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		want := PruneReport{Captures: n, Entries: n, Videos: n}
		if got, err := s.Prune(ctx, old.Add(time.Hour), false); err != nil || got != want {
			t.Fatalf("prune: %+v, %v; want %+v", got, err, want)
		}
		for i, v := range vs {
			if _, err := s.Video(ctx, v.ID); (err == nil) != (i%2 == 1) {
				t.Fatalf("video %d (%s captured): %v", i, map[bool]string{true: "recently", false: "long ago"}[i%2 == 1], err)
			}
		}
	})
}
