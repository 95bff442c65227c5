package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCaptureAtAndHistory stores three days of a chart (the last one
// partial) and a stats sample, then reads the capture in force at times
// between them and the history of a video.
func TestCaptureAtAndHistory(t *testing.T) {
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		day := func(d int) time.Time { return time.Date(2026, 3, d, 12, 0, 0, 0, time.UTC) }
		vs := testVideos("h", 3)
		var runs []int64
		for d := 1; d <= 3; d++ {
			r := startRun(t, s, "JP")
			runs = append(runs, r)
			page := []Video{vs[(d-1)%3], vs[d%3], vs[(d+1)%3]}
			for i := range page {
				page[i].Views = i64(int64(100*d + i))
			}
			if err := s.SaveSnapshot(ctx, Snapshot{RunID: r, Region: "JP", FirstRank: 1, Videos: page, At: day(d)}); err != nil {
				t.Fatal(err)
			}
			if d < 3 {
				if err := s.CompleteCapture(ctx, r, "JP", KindChart, "", day(d)); err != nil {
					t.Fatal(err)
				}
			}
		}
		if _, err := s.db.Exec(`INSERT INTO stats_samples (video, sampled_at, view_count) SELECT rowid, ?, 999 FROM videos WHERE id = 'h-000'`,
			fmtTime(day(4))); err != nil {
			t.Fatal(err)
		}

		c, es, err := s.CaptureAt(ctx, CaptureQuery{Region: "JP", Partial: true})
		if err != nil || c.RunID != runs[2] || c.Complete || len(es) != 3 || es[0].VideoID != "h-002" || *es[0].Views != 300 {
			t.Errorf("latest, partial ones included: %+v %+v %v", c, es, err)
		}
		c, _, err = s.CaptureAt(ctx, CaptureQuery{Region: "JP"})
		if err != nil || c.RunID != runs[1] || !c.Complete {
			t.Errorf("latest complete: %+v %v", c, err)
		}
		c, _, err = s.CaptureAt(ctx, CaptureQuery{Region: "JP", RunID: runs[2]})
		if err != nil || c.RunID != runs[2] || c.Complete {
			t.Errorf("a partial capture by its run: %+v %v", c, err)
		}
		c, es, err = s.CaptureAt(ctx, CaptureQuery{Region: "JP", At: day(2).Add(time.Hour)})
		if err != nil || c.RunID != runs[1] || !c.Complete || !c.CapturedAt.Equal(day(2)) || es[2].VideoID != "h-000" || *es[2].Views != 202 || es[2].Likes == nil {
			t.Errorf("at day 2: %+v %+v %v", c, es, err)
		}
		c, _, err = s.CaptureAt(ctx, CaptureQuery{Region: "JP", RunID: runs[0]})
		if err != nil || !c.CapturedAt.Equal(day(1)) {
			t.Errorf("run 1: %+v %v", c, err)
		}
		for _, q := range []CaptureQuery{{Region: "JP", At: day(1).Add(-time.Second)}, {Region: "US"}, {Region: "JP", Kind: KindSearch, Query: "x"}} {
			if _, _, err := s.CaptureAt(ctx, q); !errors.Is(err, ErrNotFound) {
				t.Errorf("%+v: %v", q, err)
			}
		}

		h, err := s.History(ctx, "h-000")
		if err != nil {
			t.Fatal(err)
		}
		var ranks, views []string
		for _, a := range h.Appearances {
			ranks = append(ranks, a.CapturedAt.Format("02")+":"+strconv.Itoa(a.Rank))
		}
		for _, p := range h.Points {
			views = append(views, p.Source+":"+strconv.Itoa(int(*p.Views)))
		}
		if got := strings.Join(ranks, " "); got != "01:1 02:3 03:2" {
			t.Errorf("appearances: %s", got)
		}
		if got := strings.Join(views, " "); got != "chart:100 chart:202 chart:301 stats:999" {
			t.Errorf("points: %s", got)
		}
		if len(h.Regions) != 1 || h.Regions[0] != (RegionSummary{Region: "JP", FirstAt: day(1), LastAt: day(3), BestRank: 1, LastRank: 2, Days: 3}) {
			t.Errorf("regions: %+v", h.Regions)
		}
		b, err := json.Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{`"video":{"id":"h-000"`, `"comment_count":null`, `"captured_at":"2026-03-01T12:00:00Z"`, `"best_rank":1`, `"source":"stats"`} {
			if !strings.Contains(string(b), want) {
				t.Errorf("JSON lacks %s: %s", want, b)
			}
		}
		if _, err := s.History(ctx, "nope"); !errors.Is(err, ErrNotFound) {
			t.Errorf("unknown video: %v", err)
		}

		hits, err := s.Search(ctx, SearchQuery{Text: "h"})
		if err != nil || len(hits) != 3 {
			t.Fatalf("search: %+v %v", hits, err)
		}
		for _, hit := range hits {
			if hit.VideoID == "h-000" && (len(hit.Regions) != 1 || hit.Regions[0].BestRank != 1 || hit.Regions[0].LastRank != 2 || !hit.Regions[0].LastAt.Equal(day(3))) {
				t.Errorf("hit regions: %+v", hit.Regions)
			}
			h, err := s.History(ctx, hit.VideoID) // each hit has its own video's ranks
			var want []HitRegion
			for _, r := range h.Regions {
				want = append(want, HitRegion{Region: r.Region, BestRank: r.BestRank, LastRank: r.LastRank, LastAt: r.LastAt})
			}
			if err != nil || fmt.Sprint(hit.Regions) != fmt.Sprint(want) {
				t.Errorf("%s: hit regions %+v, history %+v (%v)", hit.VideoID, hit.Regions, h.Regions, err)
			}
		}
	})
}

// TestCaptureAtInProgress: while a run is storing a chart page by page, the
// latest chart stays the last complete one; Partial shows the one in
// progress.
func TestCaptureAtInProgress(t *testing.T) {
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		done := startRun(t, s, "US")
		if err := s.SaveSnapshot(ctx, Snapshot{RunID: done, Region: "US", FirstRank: 1, Videos: testVideos("a", 4), At: at}); err != nil {
			t.Fatal(err)
		}
		if err := s.CompleteCapture(ctx, done, "US", KindChart, "", at); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.CaptureAt(ctx, CaptureQuery{Region: "JP"}); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "complete") {
			t.Errorf("no capture: %v", err)
		}
		running := startRun(t, s, "US")
		if err := s.SaveSnapshot(ctx, Snapshot{RunID: running, Region: "US", FirstRank: 1, Videos: testVideos("b", 2), At: at.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		c, es, err := s.CaptureAt(ctx, CaptureQuery{Region: "US"})
		if err != nil || c.RunID != done || !c.Complete || len(es) != 4 {
			t.Errorf("latest while a run is storing pages: %+v, %d entries, %v", c, len(es), err)
		}
		c, es, err = s.CaptureAt(ctx, CaptureQuery{Region: "US", Partial: true})
		if err != nil || c.RunID != running || c.Complete || len(es) != 2 {
			t.Errorf("latest with partial: %+v, %d entries, %v", c, len(es), err)
		}
		c, _, err = s.CaptureAt(ctx, CaptureQuery{Region: "US", At: at.Add(2 * time.Hour)})
		if err != nil || c.RunID != done {
			t.Errorf("at a time after the partial capture: %+v %v", c, err)
		}
	})
}

// TestCaptureAtOneSnapshot: a writer replaces the latest complete capture
// over and over (stores a new one, deletes the old one) while a reader
// reads the latest: the capture and its entries come from one snapshot, so
// the reader never sees a capture without its entries.
func TestCaptureAtOneSnapshot(t *testing.T) {
	forEachEngine(t, testCaptureAtOneSnapshot)
}

func testCaptureAtOneSnapshot(t *testing.T, w *Store) {
	ctx := context.Background()
	r := reopenReadOnly(t, w)
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	vs := testVideos("s", 20)
	store := func(i int) {
		run := startRun(t, w, "US")
		if err := w.SaveSnapshot(ctx, Snapshot{RunID: run, Region: "US", FirstRank: 1, Videos: vs, At: at.Add(time.Duration(i) * time.Second)}); err != nil {
			t.Error(err)
		}
		if err := w.CompleteCapture(ctx, run, "US", KindChart, "", at); err != nil {
			t.Error(err)
		}
	}
	store(0)
	stop := make(chan struct{})
	writer := make(chan struct{})
	go func() {
		defer close(writer)
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			store(i)
			if _, err := w.db.Exec(`DELETE FROM captures WHERE id < (SELECT max(id) FROM captures)`); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	defer func() { close(stop); <-writer }()
	for range 300 {
		c, es, err := r.CaptureAt(ctx, CaptureQuery{Region: "US"})
		if err != nil || len(es) != len(vs) {
			t.Fatalf("capture %d: %d entries, %v", c.ID, len(es), err)
		}
	}
}

// TestHistoryChanges: a video's history lists YouTube's changes between
// its first and last capture or statistics sample, none outside.
func TestHistoryChanges(t *testing.T) {
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		v := testVideos("c", 1)
		r := startRun(t, s, "US")
		if err := s.SaveSnapshot(ctx, Snapshot{RunID: r, Region: "US", FirstRank: 1, Videos: v, At: time.Date(2025, 3, 30, 23, 0, 0, 0, time.UTC)}); err != nil {
			t.Fatal(err)
		}
		dates := func() []string {
			t.Helper()
			h, err := s.History(ctx, "c-000")
			if err != nil {
				t.Fatal(err)
			}
			out := []string{}
			for _, c := range h.Changes {
				out = append(out, c.Date)
			}
			return out
		}
		if got := dates(); len(got) != 0 {
			t.Errorf("one capture: changes %q, want none", got)
		}
		views := int64(5)
		if _, err := s.SaveSamples(ctx, []Sample{{VideoID: "c-000", Views: &views}}, time.Date(2025, 7, 21, 0, 0, 0, 0, time.UTC)); err != nil {
			t.Fatal(err)
		}
		if got := dates(); !slices.Equal(got, []string{"2025-03-31", "2025-07-21"}) {
			t.Errorf("from 2025-03-30 23:00 to 2025-07-21 00:00: changes %q, want 2025-03-31 and 2025-07-21", got)
		}
	})
}

// TestCaptureAtUnstorableQuery: a search query no capture can have (a NUL,
// invalid UTF-8) is not found on both engines, not an error of PostgreSQL's
// (issue 40 item 3).
func TestCaptureAtUnstorableQuery(t *testing.T) {
	forEachEngine(t, func(t *testing.T, s *Store) {
		for _, q := range []string{"\x00", "a\xffb"} {
			_, _, err := s.CaptureAt(context.Background(), CaptureQuery{Region: "US", Kind: KindSearch, Query: q})
			if !errors.Is(err, ErrNotFound) {
				t.Errorf("CaptureAt of search %q: %v, want ErrNotFound", q, err)
			}
		}
		_, _, err := s.CaptureAt(context.Background(), CaptureQuery{Region: "U\x00", Kind: KindChart})
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("CaptureAt of region U\\x00: %v, want ErrNotFound", err)
		}
	})
}
