package fetch_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/api/youtube/v3"

	"github.com/trendfetch/trendfetch/internal/callsite"
	"github.com/trendfetch/trendfetch/internal/fetch"
	"github.com/trendfetch/trendfetch/internal/quota"
	"github.com/trendfetch/trendfetch/internal/store"
)

// TestAmendedTextRefresh (issue 23, store.policy amended) replays the
// recorded US chart of day 1, then day 5's chart 31 days later on a fake
// clock: the text of day-1 videos not on the later chart is older than 30
// days. With quota it is refreshed with videos.list.refresh in batches of
// 50 (units recorded on the run); past store.refresh_per_day only the
// capped calls are sent and the rest is removed; with the quota denied
// nothing is refreshed and all of it is removed, ids kept.
func TestAmendedTextRefresh(t *testing.T) {
	emu, dates, byDate := usDays(t)
	day1, day5 := dates[0], dates[4]
	onDay5 := map[string]bool{}
	for _, v := range byDate[day5] {
		onDay5[v.Id] = true
	}
	// videos.list id= answers the day-1 videos no longer charting, with
	// their titles edited since.
	var edited []*youtube.Video
	for _, v := range byDate[day1] {
		if !onDay5[v.Id] {
			c, sn := *v, *v.Snippet
			sn.Title += " (edited)"
			c.Snippet = &sn
			edited = append(edited, &c)
		}
	}
	emu.AddVideos(edited...)
	stale := len(edited)
	if stale <= 50 {
		t.Fatalf("only %d day-1 videos are not on day 5's chart; the test needs more than one batch", stale)
	}
	batches := (stale + 49) / 50
	ctx := context.Background()
	later := noon(day1).AddDate(0, 0, 31)
	replay := func(t *testing.T, r *fetch.Runner) store.Run {
		t.Helper()
		r.Settings.TextCutoff = func(now time.Time) time.Time {
			_, text := store.PolicyAmended.Cutoffs(now)
			return text
		}
		var last store.Run
		for _, at := range []struct {
			date string
			at   time.Time
		}{{day1, noon(day1)}, {day5, later}} {
			if err := emu.SetDate(at.date); err != nil {
				t.Fatal(err)
			}
			r.Now = func() time.Time { return at.at }
			run, err := r.Run(ctx, "US", fetch.Lease{})
			if err != nil {
				t.Fatalf("%s: %v", at.date, err)
			}
			last = run
		}
		return last
	}
	// counts returns the videos whose text was refreshed (edited titles), and those
	// whose text is removed (ids kept).
	counts := func(t *testing.T, st *store.Store) (refreshed, removed int) {
		t.Helper()
		err := st.DB().QueryRow(`SELECT
  (SELECT count(*) FROM videos WHERE text_refreshed_at IS NOT NULL AND title LIKE '% (edited)'),
  (SELECT count(*) FROM videos WHERE title = '' AND description = '' AND channel_title = '')`).Scan(&refreshed, &removed)
		if err != nil {
			t.Fatal(err)
		}
		return refreshed, removed
	}

	t.Run("refreshed", func(t *testing.T) {
		emu.ResetQuota()
		r := newPipeline(t, emu)
		r.Settings.TextRefreshPerDay = 20
		calls0 := emu.Calls(callsite.VideosList)
		run := replay(t, r)
		if run.Outcome != store.OutcomeSuccess || run.Reason != "" {
			t.Errorf("run 31 days later: %s %q", run.Outcome, run.Reason)
		}
		if run.Calls[callsite.VideosListRefresh] != batches || run.Units["units"] != int64(4+batches) {
			t.Errorf("run: calls %v units %v; want %d videos.list.refresh calls and %d units", run.Calls, run.Units, batches, 4+batches)
		}
		if got := emu.Calls(callsite.VideosList) - calls0; got != 8+batches {
			t.Errorf("emulator: %d videos.list calls, want %d", got, 8+batches)
		}
		if refreshed, removed := counts(t, r.Store.(*store.Store)); refreshed != stale || removed != 0 {
			t.Errorf("%d texts refreshed, %d removed; want %d and 0", refreshed, removed, stale)
		}
		// Refreshed: not stale again until 30 days after the refresh.
		if ids, err := r.Store.StaleText(ctx, later.Add(-time.Hour), 1000); err != nil || len(ids) != 0 {
			t.Errorf("stale after the refresh: %d, %v", len(ids), err)
		}
	})

	t.Run("cap", func(t *testing.T) {
		emu.ResetQuota()
		r := newPipeline(t, emu)
		r.Settings.TextRefreshPerDay = 1
		run := replay(t, r)
		if run.Calls[callsite.VideosListRefresh] != 1 || run.Units["units"] != 5 {
			t.Errorf("run: calls %v units %v; want 1 videos.list.refresh call", run.Calls, run.Units)
		}
		if refreshed, removed := counts(t, r.Store.(*store.Store)); refreshed != 50 || removed != stale-50 {
			t.Errorf("%d texts refreshed, %d removed; want 50 and %d", refreshed, removed, stale-50)
		}
	})

	t.Run("quota denied", func(t *testing.T) {
		emu.ResetQuota()
		r := newPipeline(t, emu)
		r.Settings.TextRefreshPerDay = 20
		b, err := quota.NewSQLite(filepath.Join(t.TempDir(), "q.db"), false)
		if err != nil {
			t.Fatal(err)
		}
		// Both charts (4 pages each) fit; no refresh does.
		lim, err := quota.New(b, []quota.Bucket{{Name: "units", Limit: 8, Window: time.Hour}},
			quota.Costs{callsite.VideosList: {{Bucket: "units", Units: 1}}, callsite.VideosListRefresh: {{Bucket: "units", Units: 1}}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { lim.Close() })
		r.Limiter = lim
		calls0 := emu.Calls(callsite.VideosList)
		run := replay(t, r)
		if run.Outcome != store.OutcomeSuccess || run.Units["units"] != 4 || run.Calls[callsite.VideosListRefresh] != 0 ||
			!strings.Contains(run.Reason, "text refresh stopped after 0 of") || !strings.Contains(run.Reason, `bucket "units"`) {
			t.Errorf("run: %s units %v calls %v reason %q", run.Outcome, run.Units, run.Calls, run.Reason)
		}
		if got := emu.Calls(callsite.VideosList) - calls0; got != 8 {
			t.Errorf("emulator: %d videos.list calls, want the 8 chart pages", got)
		}
		if refreshed, removed := counts(t, r.Store.(*store.Store)); refreshed != 0 || removed != stale {
			t.Errorf("%d texts refreshed, %d removed; want 0 and %d", refreshed, removed, stale)
		}
		var ids int
		if err := r.Store.(*store.Store).DB().QueryRow(`SELECT count(*) FROM videos`).Scan(&ids); err != nil || ids != stale+len(byDate[day5]) {
			t.Errorf("%d videos kept, want every id (%d): %v", ids, stale+len(byDate[day5]), err)
		}
	})
}
