package store

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestSaveSnapshotKinds(t *testing.T) {
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		run := startRun(t, s, "JP")
		at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		chart := testVideos("c", 3)
		if err := s.SaveSnapshot(ctx, Snapshot{RunID: run, Region: "JP", FirstRank: 1, Videos: chart, At: at}); err != nil {
			t.Fatal(err)
		}
		// Two queries in the same run, both from rank 1; a hit may also be in
		// the chart.
		hitsA := append(testVideos("a", 2), chart[0])
		if err := s.SaveSnapshot(ctx, Snapshot{RunID: run, Region: "JP", Kind: KindSearch, Query: "lofi", FirstRank: 1, Videos: hitsA, At: at}); err != nil {
			t.Fatal(err)
		}
		if err := s.SaveSnapshot(ctx, Snapshot{RunID: run, Region: "JP", Kind: KindSearch, Query: "gaming", FirstRank: 1, Videos: testVideos("b", 2), At: at}); err != nil {
			t.Fatal(err)
		}
		if err := s.SaveSnapshot(ctx, Snapshot{RunID: run, Region: "JP", Kind: KindSearch, Query: "gaming", FirstRank: 3, Videos: testVideos("b2", 1), At: at}); err != nil {
			t.Fatal(err)
		}

		ids := func(es []ChartEntry) string {
			var b []string
			for i, e := range es {
				if e.Rank != i+1 {
					t.Errorf("rank %d at %d", e.Rank, i)
				}
				b = append(b, e.VideoID)
			}
			return strings.Join(b, " ")
		}
		got, err := s.Chart(ctx, run, "JP")
		if err != nil || ids(got) != "c-000 c-001 c-002" {
			t.Errorf("Chart = %v, %v", got, err)
		}
		got, err = s.Entries(ctx, run, "JP", KindSearch, "lofi")
		if err != nil || ids(got) != "a-000 a-001 c-000" || got[2].Title != chart[0].Title {
			t.Errorf("SearchHits(lofi) = %+v, %v", got, err)
		}
		got, err = s.Entries(ctx, run, "JP", KindSearch, "gaming")
		if err != nil || ids(got) != "b-000 b-001 b2-000" {
			t.Errorf("SearchHits(gaming) = %v, %v", got, err)
		}
		if got, err := s.Entries(ctx, run, "JP", KindSearch, "nothing"); err != nil || len(got) != 0 {
			t.Errorf("SearchHits(nothing) = %v, %v", got, err)
		}
		runs, _ := s.Runs(ctx, 1)
		if runs[0].Pages != 4 || runs[0].Videos != 9 {
			t.Errorf("run counters = %d pages, %d videos", runs[0].Pages, runs[0].Videos)
		}
		if n, _ := s.CountVideos(ctx); n != 8 {
			t.Errorf("CountVideos = %d", n)
		}

		// Rejected before writing; a duplicate rank of one query stores nothing.
		for name, err := range map[string]error{
			"unknown kind":     s.SaveSnapshot(ctx, Snapshot{RunID: run, Region: "JP", Kind: "trending", FirstRank: 1, Videos: testVideos("x", 1), At: at}),
			"chart with query": s.SaveSnapshot(ctx, Snapshot{RunID: run, Region: "JP", Kind: KindChart, Query: "lofi", FirstRank: 10, Videos: testVideos("x", 1), At: at}),
			"rank 0":           s.SaveSnapshot(ctx, Snapshot{RunID: run, Region: "JP", Kind: KindSearch, Query: "lofi", FirstRank: 0, Videos: testVideos("x", 1), At: at}),
			"duplicate rank":   s.SaveSnapshot(ctx, Snapshot{RunID: run, Region: "JP", Kind: KindSearch, Query: "lofi", FirstRank: 3, Videos: testVideos("x", 1), At: at}),
		} {
			if err == nil {
				t.Errorf("%s accepted", name)
			}
		}
		if err := s.SaveSnapshot(ctx, Snapshot{RunID: 999, Region: "JP", Kind: KindSearch, Query: "q", FirstRank: 1, Videos: testVideos("x", 1), At: at}); !errors.Is(err, ErrNotFound) {
			t.Errorf("unknown run: %v", err)
		}
		if _, err := s.Video(ctx, "x-000"); !errors.Is(err, ErrNotFound) {
			t.Errorf("rejected page stored a video: %v", err)
		}
		// Search hits count for the region filter of Search.
		if hits := search(t, s, SearchQuery{Text: "b2", Region: "JP"}); len(hits) != 1 {
			t.Errorf("region filter ignores search hits: %v", hits)
		}
	})
}

func TestChannels(t *testing.T) {
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		chs := []Channel{
			{ID: "UC1", Title: "しばなんチャンネル", Country: "JP", Subscribers: i64(1_500_000), Videos: i64(900), Views: i64(1e9)},
			{ID: "UC2", Title: "Hidden", Videos: i64(3), Views: i64(40)}, // hiddenSubscriberCount
			{ID: "UC3", Title: "old title"},
			{ID: "UC3", Title: "Last wins"},
		}
		if err := s.UpsertChannels(ctx, chs, t0); err != nil {
			t.Fatal(err)
		}
		got, err := s.Channel(ctx, "UC1")
		if err != nil || !reflect.DeepEqual(got.Channel, chs[0]) || !got.FetchedAt.Equal(t0) {
			t.Errorf("Channel(UC1) = %+v, %v", got, err)
		}
		if got, _ := s.Channel(ctx, "UC2"); got.Subscribers != nil || *got.Videos != 3 {
			t.Errorf("hidden subscribers: %+v", got)
		}
		if got, _ := s.Channel(ctx, "UC3"); got.Title != "Last wins" {
			t.Errorf("duplicate id: %+v", got)
		}
		if _, err := s.Channel(ctx, "UCx"); !errors.Is(err, ErrNotFound) {
			t.Errorf("missing channel: %v", err)
		}
		if n, err := s.CountChannels(ctx); err != nil || n != 3 {
			t.Errorf("CountChannels = %d, %v", n, err)
		}

		// A refresh updates counts; an older fetch does not overwrite it.
		t1 := t0.Add(25 * time.Hour)
		if err := s.UpsertChannels(ctx, []Channel{{ID: "UC1", Title: "renamed", Subscribers: i64(2_000_000)}}, t1); err != nil {
			t.Fatal(err)
		}
		if err := s.UpsertChannels(ctx, []Channel{{ID: "UC1", Title: "stale"}}, t0); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.Channel(ctx, "UC1"); got.Title != "renamed" || *got.Subscribers != 2_000_000 || got.Views != nil || !got.FetchedAt.Equal(t1) {
			t.Errorf("after refresh: %+v", got)
		}

		// StaleChannels: input order, de-duplicated, no empty ids, chunked.
		cutoff := t1.Add(-24 * time.Hour) // UC1 fresh, UC2/UC3 stale
		in := []string{"UC9", "UC2", "UC1", "", "UC9", "UC3", "UC2"}
		stale, err := s.StaleChannels(ctx, in, cutoff)
		if err != nil || !reflect.DeepEqual(stale, []string{"UC9", "UC2", "UC3"}) {
			t.Errorf("StaleChannels = %v, %v", stale, err)
		}
		if stale, err := s.StaleChannels(ctx, []string{"UC1"}, cutoff); err != nil || stale != nil {
			t.Errorf("all fresh: %v, %v", stale, err)
		}
		if stale, err := s.StaleChannels(ctx, nil, cutoff); err != nil || stale != nil {
			t.Errorf("no ids: %v, %v", stale, err)
		}
		many := make([]Channel, 1200)
		ids := make([]string, 0, 2*len(many))
		for i := range many {
			many[i] = Channel{ID: fmt.Sprintf("UCm%04d", i)}
			ids = append(ids, fmt.Sprintf("UCm%04d", i), fmt.Sprintf("UCn%04d", i))
		}
		if err := s.UpsertChannels(ctx, many, t1); err != nil {
			t.Fatal(err)
		}
		stale, err = s.StaleChannels(ctx, ids, cutoff)
		if err != nil || len(stale) != 1200 || stale[0] != "UCn0000" || stale[1199] != "UCn1199" {
			t.Errorf("1200 stale of 2400: %d, %v", len(stale), err)
		}

		if err := s.UpsertChannels(ctx, []Channel{{ID: "UC7"}, {Title: "no id"}}, t1); err == nil {
			t.Error("channel without id accepted")
		}
		if _, err := s.Channel(ctx, "UC7"); !errors.Is(err, ErrNotFound) {
			t.Errorf("rejected batch stored a channel: %v", err)
		}
	})
}

func TestKnownVideos(t *testing.T) {
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		vs := testVideos("k", 600)
		if err := s.SaveSnapshot(ctx, Snapshot{RunID: startRun(t, s, "US"), Region: "US", FirstRank: 1, Videos: vs, At: time.Now()}); err != nil {
			t.Fatal(err)
		}
		ids := []string{"nope"}
		for _, v := range vs {
			ids = append(ids, v.ID, v.ID+"-unknown")
		}
		known, err := s.KnownVideos(ctx, ids)
		if err != nil || len(known) != 600 || !known["k-599"] || known["nope"] {
			t.Errorf("KnownVideos: %d known, %v", len(known), err)
		}
		if known, err := s.KnownVideos(ctx, nil); err != nil || len(known) != 0 {
			t.Errorf("no ids: %v, %v", known, err)
		}
	})
}

func TestCategoriesFetchedAt(t *testing.T) {
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		if at, err := s.CategoriesFetchedAt(ctx, "US"); err != nil || !at.IsZero() {
			t.Errorf("never fetched: %v, %v", at, err)
		}
		t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		s.UpsertCategories(ctx, "US", []Category{{ID: "10", Title: "Music"}, {ID: "1", Title: "Film"}}, t0)
		s.UpsertCategories(ctx, "US", []Category{{ID: "10", Title: "Music"}}, t0.Add(time.Hour))
		if at, err := s.CategoriesFetchedAt(ctx, "US"); err != nil || !at.Equal(t0.Add(time.Hour)) {
			t.Errorf("US: %v, %v", at, err)
		}
		if at, _ := s.CategoriesFetchedAt(ctx, "GB"); !at.IsZero() {
			t.Errorf("GB: %v", at)
		}
		// An empty answer is a fetch too: it is cached like any other.
		s.UpsertCategories(ctx, "KR", nil, t0)
		if at, err := s.CategoriesFetchedAt(ctx, "KR"); err != nil || !at.Equal(t0) {
			t.Errorf("KR after an empty answer = %v, %v; want %v", at, err, t0)
		}
	})
}

func TestRunCallsAndAbandon(t *testing.T) {
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		start := func(cred, region string, at time.Time) int64 {
			id, err := s.StartRun(ctx, Run{Credential: cred, Region: region, StartedAt: at})
			if err != nil {
				t.Fatal(err)
			}
			return id
		}
		dead1 := start("proj", "US", t0)
		dead2 := start("proj", "US", t0.Add(time.Hour))
		done := start("proj", "US", t0.Add(2*time.Hour))
		otherRegion := start("proj", "GB", t0)
		otherCred := start("other", "US", t0)
		calls := map[string]int{"videos.list": 4, "search.list": 1}
		if err := s.FinishRun(ctx, Run{ID: done, Outcome: OutcomeSuccess, Units: map[string]int64{"units": 104, "search": 1}, Calls: calls}); err != nil {
			t.Fatal(err)
		}
		now := t0.Add(3 * time.Hour)
		mine := start("proj", "US", now)

		n, err := s.AbandonRuns(ctx, "proj", "US", now)
		if err != nil || n != 2 {
			t.Fatalf("AbandonRuns = %d, %v", n, err)
		}
		runs, _ := s.Runs(ctx, 0)
		byID := map[int64]Run{}
		for _, r := range runs {
			byID[r.ID] = r
		}
		for _, id := range []int64{dead1, dead2} {
			r := byID[id]
			if r.Outcome != OutcomeAbandoned || r.Reason != fmt.Sprintf("process died; found by run %d", mine) || !r.FinishedAt.IsZero() {
				t.Errorf("run %d: %+v", id, r)
			}
		}
		for _, id := range []int64{otherRegion, otherCred, mine} {
			if byID[id].Outcome != OutcomeRunning {
				t.Errorf("run %d touched: %+v", id, byID[id])
			}
		}
		if r := byID[done]; r.Outcome != OutcomeSuccess || !reflect.DeepEqual(r.Calls, calls) || r.Units["units"] != 104 {
			t.Errorf("finished run: %+v", r)
		}
		if len(byID[mine].Calls) != 0 {
			t.Errorf("new run calls = %v", byID[mine].Calls)
		}
		// Nothing left to abandon; without a finder run the reason says when.
		if n, err := s.AbandonRuns(ctx, "proj", "US", now); err != nil || n != 0 {
			t.Errorf("second AbandonRuns = %d, %v", n, err)
		}
		if n, _ := s.AbandonRuns(ctx, "proj", "GB", now.Add(time.Hour)); n != 1 {
			t.Errorf("GB: %d", n)
		}
		runs, _ = s.Runs(ctx, 0)
		for _, r := range runs {
			if r.ID == otherRegion && !strings.HasPrefix(r.Reason, "process died; found at 2026-03-01T16:00:00Z") {
				t.Errorf("GB reason %q", r.Reason)
			}
		}
	})
}

func TestCheck(t *testing.T) {
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		if err := s.SaveSnapshot(ctx, Snapshot{RunID: startRun(t, s, "US"), Region: "US", FirstRank: 1, Videos: testVideos("i", 20), At: time.Now()}); err != nil {
			t.Fatal(err)
		}
		if err := s.Check(ctx); err != nil {
			t.Fatalf("Check on a sound database: %v", err)
		}
		// Change a title behind the search index's back.
		drop, index := `DROP TRIGGER videos_tri_au`, "videos_tri"
		if s.Engine() == PostgreSQL {
			drop, index = `DROP TRIGGER videos_search_au ON videos`, "video_search"
		}
		if _, err := s.db.Exec(drop); err != nil {
			t.Fatal(err)
		}
		if _, err := s.db.Exec(`UPDATE videos SET title = 'something else entirely' WHERE id = 'i-003'`); err != nil {
			t.Fatal(err)
		}
		if err := s.Check(ctx); err == nil || !strings.Contains(err.Error(), index) {
			t.Errorf("Check missed a stale search index: %v", err)
		}
	})
}

// TestFinishRunFindsLostPages: a run that saved two pages of a capture finds one in the store
// (PostgreSQL lost the other, committed without waiting for the disk, in a crash): FinishRun
// records the run failed saying so, the capture partial, and returns ErrPagesLost.
func TestFinishRunFindsLostPages(t *testing.T) {
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		run := startRun(t, s, "JP")
		at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		if err := s.SaveSnapshot(ctx, Snapshot{RunID: run, Region: "JP", FirstRank: 1, Videos: testVideos("c", 3), At: at}); err != nil {
			t.Fatal(err)
		}
		if err := s.CompleteCapture(ctx, run, "JP", KindChart, "", at); err != nil {
			t.Fatal(err)
		}
		err := s.FinishRun(ctx, Run{ID: run, Outcome: OutcomeSuccess, Pages: 2, Videos: 6})
		if !errors.Is(err, ErrPagesLost) {
			t.Fatalf("FinishRun with a page missing: %v, want ErrPagesLost", err)
		}
		runs, err := s.Runs(ctx, 0)
		if err != nil || len(runs) != 1 || runs[0].Outcome != OutcomeFailed || !strings.Contains(runs[0].Reason, "1 of its 2 pages stored") {
			t.Errorf("run recorded %+v (%v), want failed naming the lost page", runs, err)
		}
		var complete int
		if err := s.db.QueryRowContext(ctx, `SELECT complete FROM captures WHERE run_id = ?`, run).Scan(&complete); err != nil || complete != 0 {
			t.Errorf("capture complete = %d (%v), want 0 (partial)", complete, err)
		}
		if err := s.FinishRun(ctx, Run{ID: run, Outcome: OutcomeSuccess, Pages: 1, Videos: 3}); err != nil {
			t.Errorf("FinishRun with every page kept: %v", err)
		}
	})
}
