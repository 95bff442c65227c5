package store

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

func timeNow() time.Time { return time.Now() }

// TestConcurrentWriters: several goroutines, each with its own *Store (as
// separate cron processes would have), write pages of overlapping videos to
// one file at once. None may fail with "database is locked".
func TestConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	_, path := openTest(t)
	const writers, pages = 5, 4
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			s, err := Open(ctx, path)
			if err != nil {
				errs <- err
				return
			}
			defer s.Close()
			region := fmt.Sprintf("R%d", w)
			run, err := s.StartRun(ctx, Run{Region: region})
			if err != nil {
				errs <- err
				return
			}
			for p := 0; p < pages; p++ {
				// Shared ids across writers: upserts of the same rows race.
				vs := testVideos(fmt.Sprintf("p%d", p), 50)
				for i := range vs {
					vs[i].Views = i64(int64(w*1000 + i))
				}
				if err := s.SaveSnapshot(ctx, Snapshot{RunID: run, Region: region, FirstRank: p*50 + 1, Videos: vs, At: time.Now()}); err != nil {
					errs <- fmt.Errorf("writer %d page %d: %w", w, p, err)
					return
				}
				if _, err := s.Search(ctx, SearchQuery{Text: "number"}); err != nil {
					errs <- fmt.Errorf("writer %d search: %w", w, err)
					return
				}
			}
			errs <- s.FinishRun(ctx, Run{ID: run, Outcome: OutcomeSuccess})
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n, _ := s.CountVideos(ctx); n != pages*50 {
		t.Errorf("%d videos, want %d", n, pages*50)
	}
	runs, _ := s.Runs(ctx, 0)
	for _, r := range runs {
		if r.Pages != pages || r.Videos != pages*50 || r.Outcome != OutcomeSuccess {
			t.Errorf("run %+v", r)
		}
	}
	ftsIntegrity(t, s)
}
