package store

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

func timeNow() time.Time { return time.Now() }

// TestConcurrentWriters: several goroutines, each with its own *Store (as
// separate cron processes or hosts would have), write pages of overlapping
// videos, their channels and refreshed text to one database at once, half
// of them in the opposite order (two regions' charts rank the same videos
// differently). None may fail: not with "database is locked" (SQLite), nor
// with a deadlock (PostgreSQL, where each write locks its rows in one
// order).
func TestConcurrentWriters(t *testing.T) {
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		const writers, pages = 5, 4
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for w := 0; w < writers; w++ {
			s := reopen(t, s)
			region := fmt.Sprintf("R%d", w)
			run, err := s.StartRun(ctx, Run{Region: region})
			if err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for p := 0; p < pages; p++ {
					// Shared ids across writers: upserts of the same rows race.
					vs := testVideos(fmt.Sprintf("p%d", p), 50)
					for i := range vs {
						vs[i].Views = i64(int64(w*1000 + i))
					}
					if w%2 == 1 {
						slices.Reverse(vs)
					}
					if err := s.SaveSnapshot(ctx, Snapshot{RunID: run, Region: region, FirstRank: p*50 + 1, Videos: vs, At: time.Now()}); err != nil {
						errs <- fmt.Errorf("writer %d page %d: %w", w, p, err)
						return
					}
					if p == 0 {
						if err := writeOthers(s, w, vs); err != nil {
							errs <- fmt.Errorf("writer %d: %w", w, err)
							return
						}
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
	})
}

// writeOthers stores 500 channels and refreshes the text of vs, in writer
// w's order (odd writers: reversed).
func writeOthers(s *Store, w int, vs []Video) error {
	ctx := context.Background()
	chs := make([]Channel, 500)
	for i := range chs {
		chs[i] = Channel{ID: fmt.Sprintf("UC%03d", i), Title: fmt.Sprintf("writer %d", w)}
	}
	if w%2 == 1 {
		slices.Reverse(chs)
	}
	if err := s.UpsertChannels(ctx, chs, time.Now()); err != nil {
		return fmt.Errorf("channels: %w", err)
	}
	if err := s.RefreshText(ctx, vs, time.Now()); err != nil {
		return fmt.Errorf("refresh: %w", err)
	}
	return nil
}

// TestOneVersionPerChange: two hosts storing the same video's changed text
// at the same moment (two handles on one database) make one new version;
// a retried page, samples or capture completion adds no row.
func TestOneVersionPerChange(t *testing.T) {
	forEachEngine(t, func(t *testing.T, a *Store) {
		ctx := context.Background()
		b := reopen(t, a)
		at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		vs := testVideos("r", 50)
		if err := a.SaveSnapshot(ctx, Snapshot{RunID: startRun(t, a, "US"), Region: "US", FirstRank: 1, Videos: vs, At: at}); err != nil {
			t.Fatal(err)
		}
		for round := range 5 {
			for i := range vs {
				vs[i].Title = fmt.Sprintf("changed %d %d", round, i)
			}
			runA, runB := startRun(t, a, "US"), startRun(t, b, "GB")
			at = at.Add(time.Hour)
			var wg sync.WaitGroup
			errs := make([]error, 2)
			for i, x := range []struct {
				s   *Store
				run int64
				reg string
			}{{a, runA, "US"}, {b, runB, "GB"}} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[i] = x.s.SaveSnapshot(ctx, Snapshot{RunID: x.run, Region: x.reg, FirstRank: 1, Videos: vs, At: at})
				}()
			}
			wg.Wait()
			if errs[0] != nil || errs[1] != nil {
				t.Fatal(errs)
			}
			// A retried page (same run, region and ranks) finds its capture.
			if err := a.SaveSnapshot(ctx, Snapshot{RunID: runA, Region: "US", FirstRank: 1, Videos: vs, At: at}); err == nil {
				t.Errorf("round %d: a page stored twice was accepted", round)
			}
		}
		var versions, maxVersion, captures, entries int
		if err := a.db.QueryRow(`SELECT (SELECT count(*) FROM video_texts), (SELECT max(text_version) FROM videos),
       (SELECT count(*) FROM captures), (SELECT count(*) FROM entries)`).Scan(&versions, &maxVersion, &captures, &entries); err != nil {
			t.Fatal(err)
		}
		if versions != 5*50 || maxVersion != 5 || captures != 11 || entries != 11*50 {
			t.Errorf("%d old versions, newest %d, %d captures, %d entries; want 250, 5, 11, 550", versions, maxVersion, captures, entries)
		}
		samples := []Sample{{VideoID: "r-000", Views: i64(1)}, {VideoID: "r-001"}}
		for i, want := range []int{2, 0} {
			if n, err := b.SaveSamples(ctx, samples, at); err != nil || n != want {
				t.Errorf("samples, attempt %d: %d stored, %v; want %d", i+1, n, err, want)
			}
		}
		run := startRun(t, a, "FR")
		for range 2 {
			if err := b.CompleteCapture(ctx, run, "FR", KindChart, "", at); err != nil {
				t.Fatal(err)
			}
		}
		if err := a.db.QueryRow(`SELECT (SELECT count(*) FROM stats_samples), (SELECT count(*) FROM captures WHERE run_id = ?)`, run).Scan(&versions, &captures); err != nil || versions != 2 || captures != 1 {
			t.Errorf("after retries: %d samples, %d captures of the run, %v; want 2, 1", versions, captures, err)
		}
	})
}
