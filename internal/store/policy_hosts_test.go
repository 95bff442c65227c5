package store

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestPolicyManyHosts: hosts apply the storage policy at once while other
// hosts store samples and captures of the same videos (docs/design.md
// §10a). No host fails (no deadlock, no serialization or foreign-key
// failure escapes); each row is deleted by one host, so their reports add
// up to what went; nothing a writer stored meanwhile is deleted or
// cleared.
func TestPolicyManyHosts(t *testing.T) {
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
		old, cut := now.AddDate(0, 0, -40), fmtTime(now.AddDate(0, 0, -textDays))
		const rounds, cleaners, writers, oldCaptures = 4, 3, 3, 12
		var cleanHosts, writeHosts []*Store
		for range cleaners {
			cleanHosts = append(cleanHosts, reopen(t, s))
		}
		for range writers {
			writeHosts = append(writeHosts, reopen(t, s))
		}
		count := func(q string, args ...any) (n int64) {
			t.Helper()
			if err := s.db.QueryRow(q, args...).Scan(&n); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			return n
		}
		for round := range rounds {
			// Old captures: their own videos, and videos the writers store
			// again now ("s<round>-"); old samples; videos whose only recent
			// data is a sample ("k-": kept, their text cleared).
			shared := fmt.Sprintf("s%d", round)
			for c := range oldCaptures {
				vs := append(testVideos(fmt.Sprintf("o%d%02d", round, c), 10), testVideos(shared, 40)...)
				vs = append(vs, testVideos("k", 5)...)
				if err := s.SaveSnapshot(ctx, Snapshot{RunID: startRun(t, s, "XX"), Region: "XX", FirstRank: 1, Videos: vs, At: old.Add(time.Duration(c) * time.Minute)}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.SaveSamples(ctx, []Sample{{VideoID: fmt.Sprintf("o%d00-000", round), Views: i64(1)}, {VideoID: shared + "-001", Views: i64(1)}}, old); err != nil {
				t.Fatal(err)
			}
			if _, err := s.SaveSamples(ctx, []Sample{{VideoID: "k-000", Views: i64(1)}, {VideoID: "k-001"}, {VideoID: "k-002"}, {VideoID: "k-003"}, {VideoID: "k-004"}}, now.Add(-time.Hour)); err != nil {
				t.Fatal(err)
			}
			// Videos stored again now are new rows: first seen now.
			const oldVideos = `SELECT count(*) FROM videos WHERE first_seen_at < ?`
			wantCaptures := count(`SELECT count(*) FROM captures WHERE captured_at < ?`, cut)
			wantEntries := count(`SELECT count(*) FROM entries e JOIN captures c ON c.id = e.capture_id WHERE c.captured_at < ?`, cut)
			wantSamples := count(`SELECT count(*) FROM stats_samples WHERE sampled_at < ?`, cut)
			videosBefore := count(oldVideos, cut)

			start := make(chan struct{})
			var wg sync.WaitGroup
			reports := make([]PruneReport, cleaners)
			errs := make(chan error, cleaners+writers)
			for i, h := range cleanHosts {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					rep, err := PolicyYouTube.Apply(ctx, h, now, false)
					if err != nil {
						errs <- fmt.Errorf("cleaner %d: %w", i, err)
					}
					reports[i] = rep
				}()
			}
			at := now.Add(time.Duration(round) * time.Second)
			for w, h := range writeHosts {
				run := startRun(t, h, fmt.Sprintf("W%d", w))
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					vs := testVideos(shared, 50)
					if w%2 == 1 {
						slices.Reverse(vs)
					}
					var samples []Sample
					for _, v := range vs[:20] {
						samples = append(samples, Sample{VideoID: v.ID, Views: i64(int64(w))})
					}
					if _, err := h.SaveSamples(ctx, samples, at.Add(time.Duration(w)*time.Millisecond)); err != nil {
						errs <- fmt.Errorf("writer %d samples: %w", w, err)
						return
					}
					for p := range 3 {
						if err := h.SaveSnapshot(ctx, Snapshot{RunID: run, Region: fmt.Sprintf("W%d", w), FirstRank: 1 + 50*p, Videos: vs, At: at}); err != nil {
							errs <- fmt.Errorf("writer %d page %d: %w", w, p, err)
							return
						}
						slices.Reverse(vs)
					}
				}()
			}
			close(start)
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			var sum PruneReport
			for _, r := range reports {
				sum.Captures += r.Captures
				sum.Entries += r.Entries
				sum.Samples += r.Samples
				sum.Videos += r.Videos
				sum.TextsCleared += r.TextsCleared
			}
			gone := videosBefore - count(oldVideos, cut)
			if sum.Captures != wantCaptures || sum.Entries != wantEntries || sum.Samples != wantSamples || sum.Videos != gone {
				t.Errorf("round %d: the hosts report %d captures, %d entries, %d samples, %d videos deleted; %d, %d, %d, %d went",
					round, sum.Captures, sum.Entries, sum.Samples, sum.Videos, wantCaptures, wantEntries, wantSamples, gone)
			}
			if n := count(`SELECT count(*) FROM captures WHERE captured_at < ?`, cut); n != 0 {
				t.Errorf("round %d: %d old captures left", round, n)
			}
			// What the writers stored is all there, text included.
			if n := count(`SELECT count(*) FROM entries e JOIN captures c ON c.id = e.capture_id JOIN videos v ON v.rowid = e.video
WHERE c.captured_at = ? AND v.title LIKE ?`, fmtTime(at), "Video "+shared+" number %"); n != writers*150 {
				t.Errorf("round %d: %d entries of the writers' captures with their text, want %d", round, n, writers*150)
			}
			if n := count(`SELECT count(*) FROM videos WHERE id LIKE 'k-%' AND title = ''`); n != 5 || sum.TextsCleared < 5 {
				t.Errorf("round %d: %d of 5 stale texts cleared, the hosts report %d", round, n, sum.TextsCleared)
			}
			// Applied again, it finds nothing more to delete but the text
			// versions writers made meanwhile (their videos' text cleared
			// before they stored it again).
			if again, err := PolicyYouTube.Apply(ctx, s, now, false); err != nil || again != (PruneReport{Texts: again.Texts}) {
				t.Errorf("round %d: applied again: %+v, %v", round, again, err)
			}
		}
		ftsIntegrity(t, s)
	})
}
