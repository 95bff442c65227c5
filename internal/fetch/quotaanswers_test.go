package fetch_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/api/youtube/v3"

	"github.com/trendfetch/trendfetch/internal/callsite"
	"github.com/trendfetch/trendfetch/internal/config"
	"github.com/trendfetch/trendfetch/internal/fetch"
	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
	"github.com/trendfetch/trendfetch/internal/quota"
	"github.com/trendfetch/trendfetch/internal/quota/redistest"
	"github.com/trendfetch/trendfetch/internal/redisconn"
	"github.com/trendfetch/trendfetch/internal/store"
)

// TestQuotaAnswersOnTwoHosts (issue 32 item 1) replays each of Google's
// 2026 quota answers (docs/design.md §3) against runs on two hosts: two
// Runners, each with its own store and Redis client, sharing one real
// redis-server as their quota backend and one emulator as Google. Both
// hosts run day 1 (so statistics are due on day 5), then the emulator is
// told to answer the next call of a method with the shape, host A runs day
// 5, then host B. A per-day answer is sent once, never retried, and marks
// what it names in Redis: a method's own bucket (429 in Google Cloud's
// shape, or any per-day answer to videos.batchGetStats) marks that call site
// only, so host B skips it without sending it and still stores the chart; the
// project's units (403 quotaExceeded, dailyLimitExceeded) mark the
// credential, so host B sends nothing. A per-minute answer is retried (after
// its Retry-After) and succeeds, marking nothing.
func TestQuotaAnswersOnTwoHosts(t *testing.T) {
	srv := redistest.Start(t)
	p1 := recorded(t, "api_json/pyyoutube__search_search_by_keywords_p1.json")
	// One emulator for the cases (each counts its own calls): day 1's chart
	// is the sample's first 50 videos, day 5's its last 50, so the first 10
	// are due for statistics on day 5.
	emu, sample := youtubetest.New(), youtubetest.Sample()
	if err := emu.SetSearchPages(p1); err != nil {
		t.Fatal(err)
	}
	days := map[int][]*youtube.Video{1: sample[:50], 5: sample[10:]}
	for i, tc := range []struct {
		name   string
		method string
		answer youtubetest.Answer
		// site is the call site marked ("" : the credential), none when no
		// mark is wanted.
		site string
		none bool
		// extra is how many more calls of method host A sends than host B
		// (the answered one and its retries).
		extra    int
		stopped  bool   // the runs stop (the credential is marked)
		whyHas   string // in the mark's why
		noteHost string // in both runs' reasons
	}{
		{name: "search.list per day 429", method: callsite.SearchList, answer: youtubetest.PerDay429,
			site: callsite.SearchList, extra: 1, whyHas: "SearchQueriesPerDay", noteHost: "search.list"},
		{name: "batchGetStats per day 429", method: callsite.VideosBatchGetStats, answer: youtubetest.PerDay429,
			site: callsite.VideosBatchGetStats, extra: 1, whyHas: "BatchGetStatsQueriesPerDay", noteHost: "videos.batchGetStats"},
		{name: "batchGetStats 403 quotaExceeded", method: callsite.VideosBatchGetStats, answer: youtubetest.QuotaExceeded,
			site: callsite.VideosBatchGetStats, extra: 1, whyHas: "quotaExceeded", noteHost: "videos.batchGetStats"},
		{name: "search.list per minute 429", method: callsite.SearchList, answer: youtubetest.PerMinute429, none: true, extra: 1},
		{name: "videos.list 403 quotaExceeded", method: callsite.VideosList, answer: youtubetest.QuotaExceeded,
			stopped: true, whyHas: "quotaExceeded"},
		{name: "videos.list 403 dailyLimitExceeded", method: callsite.VideosList, answer: youtubetest.DailyLimitExceeded,
			stopped: true, whyHas: "dailyLimitExceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cred := fmt.Sprintf("answers-%d", i)
			host := func(name string) *fetch.Runner {
				r := newPipeline(t, emu)
				c, err := redisconn.New(srv.URL(), nil, redisconn.Sentinel{})
				if err != nil {
					t.Fatal(err)
				}
				buckets, costs, err := config.Default().Limits()
				if err != nil {
					t.Fatal(err)
				}
				lim, err := quota.New(quota.NewRedis(c, 0, 0), buckets, costs)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { lim.Close() })
				r.Limiter, r.Credential = lim, cred
				r.Settings.Retries, r.Settings.RetryBackoff = 2, time.Millisecond
				r.Settings.StatsTrackFor, r.Settings.StatsEvery = 168*time.Hour, 6*time.Hour
				r.Searches = func(string) []fetch.Search { return []fetch.Search{{Q: "python", MaxPages: 1}} }
				return r
			}
			a, b := host("A"), host("B")
			run := func(r *fetch.Runner, day int) (store.Run, error) {
				emu.SetChart("US", days[day])
				at := time.Date(2026, 11, day, 12, 0, 0, 0, time.UTC)
				r.Now = func() time.Time { return at }
				return r.Run(context.Background(), "US", fetch.Lease{})
			}
			for _, r := range []*fetch.Runner{a, b} {
				if run, err := run(r, 1); err != nil || run.Outcome != store.OutcomeSuccess {
					t.Fatalf("day 1: %v, %+v", err, run)
				}
			}

			emu.AnswerNext(tc.method, 1, tc.answer)
			before := emu.Calls(tc.method)
			runA, errA := run(a, 5)
			sentA := emu.Calls(tc.method) - before
			runB, errB := run(b, 5)
			sentB := emu.Calls(tc.method) - before - sentA

			if tc.stopped {
				var stop *fetch.StopError
				if !errors.As(errA, &stop) || stop.Site != "" || runA.Outcome != store.OutcomeDenied {
					t.Errorf("host A: %v, %s; want stopped, the credential spent", errA, runA.Outcome)
				}
				if !errors.As(errB, &stop) || runB.Outcome != store.OutcomeDenied || len(runB.Calls) != 0 {
					t.Errorf("host B: %v, %s, calls %v; want stopped before sending anything", errB, runB.Outcome, runB.Calls)
				}
				if sentA != 1 {
					t.Errorf("host A sent %s %d times, want once (never retried)", tc.method, sentA)
				}
			} else {
				for h, r := range map[string]struct {
					run store.Run
					err error
					r   *fetch.Runner
				}{"A": {runA, errA, a}, "B": {runB, errB, b}} {
					if r.err != nil || r.run.Outcome != store.OutcomeSuccess || r.run.Pages < 1 {
						t.Errorf("host %s: %v, %s, %d pages; want success with the chart stored", h, r.err, r.run.Outcome, r.run.Pages)
					}
					if !strings.Contains(r.run.Reason, tc.noteHost) {
						t.Errorf("host %s: reason %q, want it to name %q", h, r.run.Reason, tc.noteHost)
					}
					if chart, err := r.r.Store.(*store.Store).Chart(context.Background(), r.run.ID, "US"); err != nil || len(chart) == 0 {
						t.Errorf("host %s: chart of day 5: %d videos, %v", h, len(chart), err)
					}
				}
				if sentA-sentB != tc.extra {
					t.Errorf("%s sent %d times by host A, %d by host B; want %d more by A", tc.method, sentA, sentB, tc.extra)
				}
				if tc.site != "" && sentB != 0 {
					t.Errorf("host B sent %s %d times while it is marked spent", tc.method, sentB)
				}
			}

			st := a.Limiter.Status(context.Background(), cred)
			if tc.none {
				if len(st.Marks) != 0 {
					t.Errorf("marks %+v after a per-minute answer, want none", st.Marks)
				}
				return
			}
			next := quota.NextPacificMidnight(time.Now())
			if len(st.Marks) != 1 || st.Marks[0].Site != tc.site || !strings.Contains(st.Marks[0].Why, tc.whyHas) ||
				st.Marks[0].Until.Sub(next).Abs() > time.Second {
				t.Errorf("marks %+v, want one of %q until %s saying %q", st.Marks, tc.site, next, tc.whyHas)
			}
		})
	}
}
