package fetch_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/api/youtube/v3"

	"github.com/trendfetch/trendfetch/internal/callsite"
	"github.com/trendfetch/trendfetch/internal/fetch"
	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
	"github.com/trendfetch/trendfetch/internal/quota"
	"github.com/trendfetch/trendfetch/internal/store"
)

// usDays loads the recorded 2017 US trending CSV: the emulator with its days
// loaded, and the charts of the first five dates (YYYY-MM-DD) as parsed.
func usDays(t *testing.T) (*youtubetest.Server, []string, map[string][]*youtube.Video) {
	t.Helper()
	path := filepath.Join(youtubetest.DataDir(t), "kaggle_youtube_new_2017", "USvideos.csv")
	emu := youtubetest.New()
	_, dates, err := emu.LoadDaysFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	raw, charts, err := youtubetest.LoadCSVCharts(f, "US")
	if err != nil {
		t.Fatal(err)
	}
	byDate := map[string][]*youtube.Video{}
	for _, d := range raw {
		n, _ := youtubetest.NormalizeDate(d)
		byDate[n] = charts[d]
	}
	return emu, dates[:5], byDate
}

// noon is the run clock of a trending date.
func noon(date string) time.Time {
	d, _ := time.Parse(time.DateOnly, date)
	return d.Add(12 * time.Hour)
}

// statsOf renders the statistics of a CSV row as the store keeps them: a
// count the API omits (ratings_disabled or comments_disabled in the CSV;
// the emulator then leaves it out of ForceSendFields) is null.
func statsOf(v *youtube.Video) string {
	s := v.Statistics
	count := func(field string, n uint64) string {
		if !slices.Contains(s.ForceSendFields, field) {
			return "null"
		}
		return fmt.Sprint(n)
	}
	return count("ViewCount", s.ViewCount) + "/" + count("LikeCount", s.LikeCount) + "/" + count("CommentCount", s.CommentCount)
}

func ptr(p *int64) string {
	if p == nil {
		return "null"
	}
	return fmt.Sprint(*p)
}

// TestReplayFiveDays replays five trending dates of the recorded 2017 US
// chart through the emulator, changing its date between runs: every entry's
// statistics equal the CSV row of that video and date, and a video on all
// five charts has five points in order.
func TestReplayFiveDays(t *testing.T) {
	emu, dates, byDate := usDays(t)
	r := newPipeline(t, emu)
	r.Settings.StatsTrackFor = 0
	ctx := context.Background()
	seen := map[string]int{}
	for _, d := range dates {
		if err := emu.SetDate(d); err != nil {
			t.Fatal(err)
		}
		at := noon(d)
		r.Now = func() time.Time { return at }
		run, err := r.Run(ctx, "US", fetch.Lease{})
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		c, entries, err := r.Store.(*store.Store).CaptureAt(ctx, store.CaptureQuery{Region: "US", RunID: run.ID})
		if err != nil {
			t.Fatal(err)
		}
		want := byDate[d]
		if !c.Complete || len(entries) != len(want) || len(want) != 200 {
			t.Fatalf("%s: capture %+v with %d entries, want complete with %d", d, c, len(entries), len(want))
		}
		for i, e := range entries {
			got := fmt.Sprintf("%d %s %s/%s/%s", e.Rank, e.VideoID, ptr(e.Views), ptr(e.Likes), ptr(e.Comments))
			if exp := fmt.Sprintf("%d %s %s", i+1, want[i].Id, statsOf(want[i])); got != exp {
				t.Fatalf("%s: entry %q, want %q (CSV)", d, got, exp)
			}
			seen[e.VideoID]++
		}
	}
	id := ""
	for _, v := range byDate[dates[0]] {
		if seen[v.Id] == 5 {
			id = v.Id
			break
		}
	}
	if id == "" {
		t.Fatal("no video on all five charts")
	}
	h, err := r.Store.(*store.Store).History(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Points) != 5 || len(h.Regions) != 1 || h.Regions[0].Days != 5 {
		t.Fatalf("history of %s: %d points, regions %+v", id, len(h.Points), h.Regions)
	}
	for i, p := range h.Points {
		var want *youtube.Video
		for _, v := range byDate[dates[i]] {
			if v.Id == id {
				want = v
			}
		}
		if !p.At.Equal(noon(dates[i])) || fmt.Sprintf("%s/%s/%s", ptr(p.Views), ptr(p.Likes), ptr(p.Comments)) != statsOf(want) {
			t.Errorf("point %d of %s: %+v, want %s at %s", i, id, p, statsOf(want), dates[i])
		}
	}
}

// TestStatsStep: videos of day 1 not on day 5's chart are sampled on day 5
// with videos.batchGetStats in ceil(n/50) calls charged to the stats bucket
// only (the emulator's stats bucket count equals the limiter's), with day
// 5's values (their latest CSV row on or before it); the units bucket pays
// the chart pages only. A stats limit of 1 samples one batch, then stops
// only that step, noted on the run, with the chart kept.
func TestStatsStep(t *testing.T) {
	emu, dates, byDate := usDays(t)
	day1, day5 := dates[0], dates[4]
	onDay5 := map[string]bool{}
	for _, v := range byDate[day5] {
		onDay5[v.Id] = true
	}
	want := map[string]string{} // id -> stats as of day 5
	for _, v := range byDate[day1] {
		if onDay5[v.Id] {
			continue
		}
		for _, d := range dates {
			for _, w := range byDate[d] {
				if w.Id == v.Id {
					want[v.Id] = statsOf(w)
				}
			}
		}
	}
	n := len(want)
	if n < 51 {
		t.Fatalf("only %d day-1 videos left the chart by day 5; the test needs more than one batch", n)
	}
	ctx := context.Background()
	replay := func(t *testing.T, r *fetch.Runner) (store.Run, store.Run) {
		t.Helper()
		var runs []store.Run
		for _, d := range []string{day1, day5} {
			if err := emu.SetDate(d); err != nil {
				t.Fatal(err)
			}
			at := noon(d)
			r.Now = func() time.Time { return at }
			run, err := r.Run(ctx, "US", fetch.Lease{})
			if err != nil {
				t.Fatalf("%s: %v", d, err)
			}
			runs = append(runs, run)
		}
		return runs[0], runs[1]
	}

	t.Run("all due", func(t *testing.T) {
		emu.ResetQuota()
		calls0 := emu.Calls(callsite.VideosBatchGetStats)
		r := newPipeline(t, emu)
		r.Settings.StatsTrackFor, r.Settings.StatsEvery = 168*time.Hour, 6*time.Hour
		first, fifth := replay(t, r)
		batches := int64((n + 49) / 50)
		if got := int64(emu.Calls(callsite.VideosBatchGetStats) - calls0); got != batches {
			t.Errorf("batchGetStats calls %d, want ceil(%d/50) = %d", got, n, batches)
		}
		if first.Units["stats"] != 0 || fifth.Units["stats"] != batches || fifth.Units["units"] != 4 || first.Units["units"] != 4 {
			t.Errorf("units: day 1 %v, day 5 %v; want 4 units each and stats %d on day 5 only", first.Units, fifth.Units, batches)
		}
		if got := emu.BucketUnits(callsite.BucketStats, testKey); got != batches || emu.Units(testKey) != 8 {
			t.Errorf("emulator: stats bucket %d, units %d; want %d and 8", got, emu.Units(testKey), batches)
		}
		if fifth.Outcome != store.OutcomeSuccess || fifth.Reason != "" {
			t.Errorf("day 5 run: %s %q", fifth.Outcome, fifth.Reason)
		}
		for id, exp := range want {
			h, err := r.Store.(*store.Store).History(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			last := h.Points[len(h.Points)-1]
			got := fmt.Sprintf("%s/%s/%s", ptr(last.Views), ptr(last.Likes), ptr(last.Comments))
			if last.Source != store.SourceStats || !last.At.Equal(noon(day5)) || got != exp {
				t.Fatalf("%s: last point %s %s at %s, want stats %s at day 5", id, last.Source, got, last.At, exp)
			}
		}
		// Sampled just now: not due again within stats.every.
		due, err := r.Store.DueForStats(ctx, "US", fifth.ID, noon(day5).Add(-168*time.Hour), noon(day5).Add(time.Hour-6*time.Hour))
		if err != nil || len(due) != 0 {
			t.Errorf("due again an hour later: %d, %v", len(due), err)
		}
	})

	t.Run("stats limit 1", func(t *testing.T) {
		emu.ResetQuota()
		r := newPipeline(t, emu)
		r.Settings.StatsTrackFor, r.Settings.StatsEvery = 168*time.Hour, 6*time.Hour
		b, err := quota.NewSQLite(filepath.Join(t.TempDir(), "q.db"), false)
		if err != nil {
			t.Fatal(err)
		}
		lim, err := quota.New(b, []quota.Bucket{{Name: "units", Limit: 100, Window: time.Hour}, {Name: "stats", Limit: 1, Window: time.Hour}},
			quota.Costs{callsite.VideosList: {{Bucket: "units", Units: 1}}, callsite.VideosBatchGetStats: {{Bucket: "stats", Units: 1}}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { lim.Close() })
		r.Limiter = lim
		_, fifth := replay(t, r)
		if fifth.Outcome != store.OutcomeSuccess || fifth.Units["stats"] != 1 || !strings.Contains(fifth.Reason, "statistics step stopped after 50 of") ||
			!strings.Contains(fifth.Reason, `bucket "stats"`) {
			t.Errorf("day 5 run: %s units %v reason %q", fifth.Outcome, fifth.Units, fifth.Reason)
		}
		c, entries, err := r.Store.(*store.Store).CaptureAt(ctx, store.CaptureQuery{Region: "US", RunID: fifth.ID})
		if err != nil || !c.Complete || len(entries) != 200 {
			t.Errorf("day 5 chart: %+v, %d entries, %v", c, len(entries), err)
		}
		var samples int
		if err := r.Store.(*store.Store).DB().QueryRow(`SELECT count(*) FROM stats_samples`).Scan(&samples); err != nil || samples != 50 {
			t.Errorf("%d samples stored, want 50 (%v)", samples, err)
		}
	})
}

// replayDays runs r once per date at noon UTC, the emulator serving that
// date, and returns the runs.
func replayDays(t *testing.T, r *fetch.Runner, emu *youtubetest.Server, dates []string) []store.Run {
	t.Helper()
	var runs []store.Run
	for _, d := range dates {
		if err := emu.SetDate(d); err != nil {
			t.Fatal(err)
		}
		at := noon(d)
		r.Now = func() time.Time { return at }
		run, err := r.Run(context.Background(), "US", fetch.Lease{})
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		runs = append(runs, run)
	}
	return runs
}

// charts renders every chart capture of st: "time rank id views/likes/comments" lines.
func charts(t *testing.T, st *store.Store) string {
	t.Helper()
	var b strings.Builder
	err := st.Export(context.Background(), store.ExportQuery{}, func(r *store.ExportRow) error {
		n := func(v sql.NullInt64) string {
			if !v.Valid {
				return "null"
			}
			return fmt.Sprint(v.Int64)
		}
		fmt.Fprintf(&b, "%s %d %s %s/%s/%s\n", r.CapturedAt.Format(time.DateOnly), r.Rank, r.VideoID, n(r.Views), n(r.Likes), n(r.Comments))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestExportRoundTrip: the five replayed days exported in each layout with
// every capture, loaded back into a new emulator by its CSV loaders and
// re-ingested into an empty database on the same days, give identical
// charts (ranks, ids, statistics). JSON Lines carries the same rows.
func TestExportRoundTrip(t *testing.T) {
	emu, dates, _ := usDays(t)
	r := newPipeline(t, emu)
	r.Settings.StatsTrackFor = 0
	replayDays(t, r, emu, dates)
	want := charts(t, r.Store.(*store.Store))
	if strings.Count(want, "\n") != 1000 {
		t.Fatalf("%d rows stored, want 1000", strings.Count(want, "\n"))
	}
	for _, layout := range []string{store.LayoutYoutubeNew, store.LayoutTrendingDaily} {
		t.Run(layout, func(t *testing.T) {
			var buf strings.Builder
			w, err := store.NewExportWriter(&buf, store.ExportFormat{Format: "csv", Layout: layout, PerCapture: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Store.(*store.Store).Export(context.Background(), store.ExportQuery{}, w.Row); err != nil {
				t.Fatal(err)
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			raw, loaded, err := youtubetest.LoadCSVCharts(strings.NewReader(buf.String()), "US")
			if err != nil {
				t.Fatalf("the emulator cannot load the export: %v\n%.500s", err, buf.String())
			}
			emu2 := youtubetest.New()
			if err := emu2.LoadDays("US", raw, loaded); err != nil {
				t.Fatal(err)
			}
			r2 := newPipeline(t, emu2)
			r2.Settings.StatsTrackFor = 0
			replayDays(t, r2, emu2, dates)
			if got := charts(t, r2.Store.(*store.Store)); got != want {
				t.Errorf("re-ingested charts differ from the originals")
			}
		})
	}
	var buf strings.Builder
	w, _ := store.NewExportWriter(&buf, store.ExportFormat{Format: "jsonl"})
	if err := r.Store.(*store.Store).Export(context.Background(), store.ExportQuery{EveryDay: true}, w.Row); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1000 {
		t.Fatalf("jsonl: %d lines", len(lines))
	}
	var row map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &row); err != nil {
		t.Fatalf("jsonl line 1: %v\n%s", err, lines[0])
	}
	for _, k := range []string{"region", "captured_at", "rank", "complete", "video_id", "title", "tags", "view_count", "like_count", "comment_count", "published_at", "duration", "description"} {
		if _, ok := row[k]; !ok {
			t.Errorf("jsonl lacks %s: %s", k, lines[0])
		}
	}
}

// TestStatsQuotaExceededKeepsCredential: Google's 403 quotaExceeded on
// videos.batchGetStats (its own bucket spent) stops only the statistics
// step; the credential is not marked exhausted, so the next chart run is
// admitted.
func TestStatsQuotaExceededKeepsCredential(t *testing.T) {
	emu, dates, _ := usDays(t)
	r := newPipeline(t, emu)
	r.Settings.StatsTrackFor, r.Settings.StatsEvery = 168*time.Hour, 6*time.Hour
	replayDays(t, r, emu, dates[:1])
	emu.FailNext(callsite.VideosBatchGetStats, 1, 403)
	runs := replayDays(t, r, emu, dates[4:5])
	if runs[0].Outcome != store.OutcomeSuccess || !strings.Contains(runs[0].Reason, "videos.batchGetStats skipped: the API answered HTTP 403 quotaExceeded") {
		t.Errorf("day 5: %s %q", runs[0].Outcome, runs[0].Reason)
	}
	again := replayDays(t, r, emu, dates[4:5])
	if again[0].Outcome != store.OutcomeSuccess || again[0].Pages != 4 {
		t.Errorf("next run after a stats quotaExceeded: %+v", again[0])
	}
}
