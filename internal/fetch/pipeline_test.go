package fetch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"google.golang.org/api/youtube/v3"

	"github.com/trendfetch/trendfetch/internal/callsite"
	"github.com/trendfetch/trendfetch/internal/config"
	"github.com/trendfetch/trendfetch/internal/fetch"
	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
	"github.com/trendfetch/trendfetch/internal/quota"
	"github.com/trendfetch/trendfetch/internal/store"
)

// defaultLimiter is the product's default buckets and costs, on the
// embedded backend.
func defaultLimiter(t testing.TB) *quota.Limiter {
	t.Helper()
	buckets, costs, err := config.Default().Limits()
	if err != nil {
		t.Fatal(err)
	}
	b, err := quota.NewSQLite(filepath.Join(t.TempDir(), "quota.db"), false)
	if err != nil {
		t.Fatal(err)
	}
	lim, err := quota.New(b, buckets, costs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lim.Close() })
	return lim
}

// newPipeline wires a Runner with the default limiter to emu and a fresh store.
func newPipeline(t testing.TB, emu *youtubetest.Server) *fetch.Runner {
	t.Helper()
	ctx := context.Background()
	url := emu.StartTest(t)
	svc, err := fetch.NewService(ctx, testKey, url+"/")
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "tf.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &fetch.Runner{Service: svc, Limiter: defaultLimiter(t), Store: st, Credential: "proj",
		Policy: config.Default().Policy, Settings: fetch.Settings{Timeout: 5 * time.Second}, Log: zerolog.Nop()}
}

func recorded(t testing.TB, rel string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(youtubetest.DataDir(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func ceilDiv(a, b int) int64 { return int64((a + b - 1) / b) }

func assertChart(t *testing.T, st *store.Store, run store.Run, want []*youtube.Video) {
	t.Helper()
	got, err := st.Chart(context.Background(), run.ID, run.Region)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%s: stored %d chart entries, want %d", run.Region, len(got), len(want))
	}
	for i := range want {
		if got[i].Rank != i+1 || got[i].VideoID != want[i].Id {
			t.Fatalf("%s rank %d: stored %s (rank %d), want %s", run.Region, i+1, got[i].VideoID, got[i].Rank, want[i].Id)
		}
	}
}

// TestEveryRecordedRegion ingests each region of the 2018-11-01 snapshots:
// the stored chart equals the CSV rows in order and units = ceil(rows/50).
func TestEveryRecordedRegion(t *testing.T) {
	dir := filepath.Join(youtubetest.DataDir(t), "api_snapshot_2018-11-01")
	files, err := filepath.Glob(filepath.Join(dir, "*_videos.csv"))
	if err != nil || len(files) != 11 {
		t.Fatalf("want 11 snapshot files, got %d (%v)", len(files), err)
	}
	emu := youtubetest.New()
	charts := map[string][]*youtube.Video{}
	for _, f := range files {
		region, videos, err := youtubetest.LoadCSVFile(f)
		if err != nil {
			t.Fatal(err)
		}
		emu.SetChart(region, videos)
		charts[region] = videos
	}
	r := newPipeline(t, emu)
	for region, want := range charts {
		before := emu.Units(testKey)
		run, err := r.Run(context.Background(), region, fetch.Lease{})
		if err != nil {
			t.Fatalf("%s: %v", region, err)
		}
		assertChart(t, r.Store.(*store.Store), run, want)
		if run.Units["units"] != ceilDiv(len(want), 50) || emu.Units(testKey)-before != run.Units["units"] {
			t.Errorf("%s: %d rows cost %d units (emulator %d), want %d", region, len(want), run.Units["units"], emu.Units(testKey)-before, ceilDiv(len(want), 50))
		}
	}
}

// TestEveryKaggle2017Date ingests each trending date of each 2017 Kaggle
// file as its own run.
func TestEveryKaggle2017Date(t *testing.T) {
	dir := filepath.Join(youtubetest.DataDir(t), "kaggle_youtube_new_2017")
	wantDates := map[string]int{"US": 15, "FR": 17, "CA": 3, "GB": 3}
	emu := youtubetest.New()
	r := newPipeline(t, emu)
	for region, nDates := range wantDates {
		f, err := os.Open(filepath.Join(dir, region+"videos.csv"))
		if err != nil {
			t.Fatal(err)
		}
		dates, charts, err := youtubetest.LoadCSVCharts(f, region)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(dates) != nDates {
			t.Fatalf("%s: %d dates, want %d", region, len(dates), nDates)
		}
		for _, date := range dates {
			want := charts[date]
			if len(want) > callsite.ChartMax {
				want = want[:callsite.ChartMax]
			}
			emu.SetChart(region, want)
			run, err := r.Run(context.Background(), region, fetch.Lease{})
			if err != nil {
				t.Fatalf("%s %s: %v", region, date, err)
			}
			assertChart(t, r.Store.(*store.Store), run, want)
			if run.Units["units"] != ceilDiv(len(want), 50) {
				t.Errorf("%s %s: %d rows cost %d units", region, date, len(want), run.Units["units"])
			}
		}
	}
}

// setupFullPass serves the 11 recorded regions with categories and channels
// enrichment and returns a runner, the regions and the number of distinct
// channels in the data.
func setupFullPass(t testing.TB) (*fetch.Runner, *youtubetest.Server, []string, int) {
	dir := filepath.Join(youtubetest.DataDir(t), "api_snapshot_2018-11-01")
	files, _ := filepath.Glob(filepath.Join(dir, "*_videos.csv"))
	sort.Strings(files)
	emu := youtubetest.New()
	if err := emu.SetCategories("", recorded(t, "rsrishav_trending_2020/nonUS_category_id.json")); err != nil {
		t.Fatal(err)
	}
	if err := emu.SetChannels(recorded(t, "api_json/pyyoutube__channels_info_multiple.json")); err != nil {
		t.Fatal(err)
	}
	var regions []string
	channels := map[string]bool{}
	for _, f := range files {
		region, videos, err := youtubetest.LoadCSVFile(f)
		if err != nil {
			t.Fatal(err)
		}
		emu.SetChart(region, videos)
		regions = append(regions, region)
		for _, v := range videos {
			channels[v.Snippet.ChannelId] = true
		}
	}
	r := newPipeline(t, emu)
	r.Settings.ChannelsRefresh = 24 * time.Hour
	r.Settings.CategoriesRefresh = 7 * 24 * time.Hour
	return r, emu, regions, len(channels)
}

// fullPass runs regions as one invocation (as `run --all` does).
func fullPass(t testing.TB, r *fetch.Runner, regions []string) []store.Run {
	var runs []store.Run
	r.Backlog = &fetch.Backlog{}
	for i, region := range regions {
		r.Backlog.Hold = i < len(regions)-1
		run, err := r.Run(context.Background(), region, fetch.Lease{})
		if err != nil {
			t.Fatalf("%s: %v", region, err)
		}
		runs = append(runs, run)
	}
	return runs
}

// TestQuotaEfficiencyFullPass: a full pass over the 11 recorded regions with
// channels enrichment spends exactly the minimum the API allows: chart pages
// + ceil(new channels/50) + one category refresh per region.
func TestQuotaEfficiencyFullPass(t *testing.T) {
	r, emu, regions, nChannels := setupFullPass(t)
	runs := fullPass(t, r, regions)
	var units int64
	videos := 0
	pages := int64(0)
	for _, run := range runs {
		units += run.Units["units"]
		pages += ceilDiv(run.Videos, 50)
		videos += run.Videos
	}
	want := pages + ceilDiv(nChannels, 50) + int64(len(runs))
	if units != want || emu.Units(testKey) != want {
		t.Errorf("full pass spent %d units (emulator %d), want the minimum %d = %d chart pages + ceil(%d channels/50) + %d category refreshes",
			units, emu.Units(testKey), want, pages, nChannels, len(runs))
	}
	stored, _ := r.Store.(*store.Store).CountVideos(context.Background())
	t.Logf("full pass: %d units for %d stored videos = %.1f units per 1,000 videos (%d chart pages, %d channels, %d regions)",
		units, stored, float64(units)*1000/float64(stored), pages, nChannels, len(runs))
	if n, _ := r.Store.(*store.Store).CountChannels(context.Background()); n != int64(nChannels) {
		t.Errorf("%d channels stored, want %d", n, nChannels)
	}

	// A second pass refreshes nothing: only chart pages are spent.
	before := emu.Units(testKey)
	for _, run := range runs {
		if _, err := r.Run(context.Background(), run.Region, fetch.Lease{}); err != nil {
			t.Fatal(err)
		}
	}
	if got := emu.Units(testKey) - before; got != pages {
		t.Errorf("second pass spent %d units, want %d (chart pages only: channels and categories are fresh)", got, pages)
	}
	if videos != 11*200-(200-77)-(200-84)-(200-199) {
		t.Errorf("%d chart rows stored, want the CSV rows", videos)
	}
}

// BenchmarkFullPass times a full 11-region pass (with channels and
// categories) into a fresh database against the local emulator, setup
// (loading the CSVs, creating the databases) excluded; target < 2 s.
func BenchmarkFullPass(b *testing.B) {
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		r, _, regions, _ := setupFullPass(b)
		b.StartTimer()
		fullPass(b, r, regions)
	}
}

func TestSearchCallSite(t *testing.T) {
	emu := youtubetest.New()
	p1 := recorded(t, "api_json/pyyoutube__search_search_by_keywords_p1.json")
	p2 := recorded(t, "api_json/pyyoutube__search_search_by_keywords_p2.json")
	if err := emu.SetSearchPages(p1, p2); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, raw := range [][]byte{p1, p2} {
		var resp youtube.SearchListResponse
		if err := json.Unmarshal(raw, &resp); err != nil {
			t.Fatal(err)
		}
		for _, it := range resp.Items {
			if it.Id.VideoId != "" {
				ids = append(ids, it.Id.VideoId)
			}
		}
	}
	uniq := map[string]bool{}
	for _, id := range ids {
		uniq[id] = true
	}
	// The recorded hits become findable videos; the first 10 are also on the chart.
	sample := youtubetest.Sample()
	hits := make([]*youtube.Video, len(ids))
	for i, id := range ids {
		v := *sample[i%len(sample)]
		v.Id = id
		hits[i] = &v
	}
	chart := append(append([]*youtube.Video{}, hits[:10]...), sample[:40]...)
	emu.SetChart("US", chart)
	emu.AddVideos(hits...)
	r := newPipeline(t, emu)
	r.Searches = func(string) []fetch.Search {
		return []fetch.Search{{Q: "python", Order: "viewCount", PublishedAfter: 48 * time.Hour, MaxPages: 2}}
	}
	run, err := r.Run(context.Background(), "US", fetch.Lease{})
	if err != nil {
		t.Fatal(err)
	}
	// 1 chart page + 2 search pages (100 units each, 1 in bucket search) +
	// one videos.list id= batch for the hits not on the chart.
	if run.Units["units"] != 1+200+1 || run.Units["search"] != 2 {
		t.Errorf("units = %v, want units 202, search 2", run.Units)
	}
	if emu.Calls("search.list") != 2 || emu.Calls("videos.list") != 2 {
		t.Errorf("calls: search %d, videos %d; want 2 and 2", emu.Calls("search.list"), emu.Calls("videos.list"))
	}
	for _, req := range emu.Requests() {
		if req.Method == "search.list" && (req.Query.Get("type") != "video" || req.Query.Get("regionCode") != "US" || req.Query.Get("q") != "python" || req.Query.Get("publishedAfter") == "") {
			t.Errorf("search.list query %v", req.Query)
		}
		if n := len(strings.Split(strings.Join(req.Query["id"], ","), ",")); req.Method == "videos.list" && req.Query.Get("id") != "" && n != len(uniq)-10 {
			t.Errorf("videos.list id= batch of %d, want the %d hits not already fetched", n, len(uniq)-10)
		}
	}
	got, err := r.Store.(*store.Store).Entries(context.Background(), run.ID, "US", store.KindSearch, "python")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(uniq) || got[0].VideoID != ids[0] || got[len(got)-1].VideoID != ids[len(ids)-1] {
		t.Errorf("search snapshot has %d hits, want the %d distinct hits in API order", len(got), len(uniq))
	}
	assertChart(t, r.Store.(*store.Store), run, chart)
}

func TestSearchFailsClosedWhenLimiterIsDown(t *testing.T) {
	emu := youtubetest.New()
	emu.SetChart("US", youtubetest.Sample())
	r := newPipeline(t, emu)
	buckets, costs, _ := config.Default().Limits()
	dir := t.TempDir()
	b, err := quota.NewSQLite(filepath.Join(dir, "q.db"), false)
	if err != nil {
		t.Fatal(err)
	}
	lim, err := quota.New(b, buckets, costs)
	if err != nil {
		t.Fatal(err)
	}
	r.Limiter = lim
	r.Searches = func(string) []fetch.Search { return []fetch.Search{{Q: "x", MaxPages: 1}} }
	b.Close() // every later decision fails: the backend is unavailable
	run, err := r.Run(context.Background(), "US", fetch.Lease{})
	var stop *fetch.StopError
	if !errors.As(err, &stop) || !strings.Contains(stop.Reason, "limiter unavailable (search.list is fail-closed)") {
		t.Fatalf("err = %v, want a fail-closed stop at search.list", err)
	}
	if run.Unmetered != 2 || emu.Calls("search.list") != 0 || emu.Calls("videos.list") != 2 {
		t.Errorf("run %+v; search calls %d, videos calls %d: want the chart fetched unmetered (fail-open) and no search", run, emu.Calls("search.list"), emu.Calls("videos.list"))
	}
}

func TestRetriesAreBoundedAndReserved(t *testing.T) {
	t.Run("recovers", func(t *testing.T) {
		emu := youtubetest.New()
		emu.SetChart("US", youtubetest.Sample())
		r := newPipeline(t, emu)
		r.Settings.Retries, r.Settings.RetryBackoff = 2, time.Millisecond
		emu.FailNext("videos.list", 2, 503)
		run, err := r.Run(context.Background(), "US", fetch.Lease{})
		if err != nil {
			t.Fatal(err)
		}
		// Page 1 took 3 attempts, page 2 one: every attempt is reserved.
		if run.Units["units"] != 4 || emu.Units(testKey) != 4 || run.Videos != youtubetest.SampleSize {
			t.Errorf("units %v (emulator %d), videos %d; want 4 units, all videos", run.Units, emu.Units(testKey), run.Videos)
		}
	})
	t.Run("gives up", func(t *testing.T) {
		emu := youtubetest.New()
		emu.SetChart("US", youtubetest.Sample())
		r := newPipeline(t, emu)
		r.Settings.Retries, r.Settings.RetryBackoff = 2, time.Millisecond
		var page2 bool
		emu.SetHook(func(w http.ResponseWriter, req *http.Request) bool {
			if req.URL.Query().Get("pageToken") != "" {
				page2 = true
				w.WriteHeader(http.StatusBadGateway)
				fmt.Fprint(w, `{"error":{"code":502,"message":"bad gateway","errors":[{"reason":"backendError"}]}}`)
				return true
			}
			return false
		})
		run, err := r.Run(context.Background(), "US", fetch.Lease{})
		if err == nil || !strings.Contains(err.Error(), "after 3 attempts") || !page2 {
			t.Fatalf("err = %v, want failure after 3 attempts", err)
		}
		if run.Outcome != store.OutcomeFailed || run.Pages != 1 || emu.Calls("videos.list") != 4 || run.Units["units"] != 4 {
			t.Errorf("run %+v, calls %d: want failed, page 1 kept, 1+3 calls all reserved", run, emu.Calls("videos.list"))
		}
	})
}

func TestMalformedJSONRejectsThePage(t *testing.T) {
	emu := youtubetest.New()
	emu.SetChart("US", youtubetest.Sample())
	r := newPipeline(t, emu)
	r.Settings.Retries = 0
	emu.SetHook(func(w http.ResponseWriter, req *http.Request) bool {
		if req.URL.Query().Get("pageToken") != "" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"kind":"youtube#videoListResponse","items":[{"id":"x","snippet":{"title":"trunc`)
			return true
		}
		return false
	})
	run, err := r.Run(context.Background(), "US", fetch.Lease{})
	if err == nil || run.Outcome != store.OutcomeFailed {
		t.Fatalf("err %v, outcome %s: want a failed run", err, run.Outcome)
	}
	n, _ := r.Store.(*store.Store).CountVideos(context.Background())
	if n != 50 || run.Pages != 1 {
		t.Errorf("%d videos / %d pages stored, want page 1 only (50)", n, run.Pages)
	}
}

// TestCategoryCharts: a region with chart.categories gets, after its whole
// chart, one narrowed chart per videoCategoryId, stored as its own snapshot
// kind, never mixed into the chart ranks.
func TestCategoryCharts(t *testing.T) {
	emu := youtubetest.New()
	chart := youtubetest.Sample()
	emu.SetChart("US", chart)
	r := newPipeline(t, emu)
	r.Settings.ChartCategories = map[string][]string{"US": {"10", "20"}}
	run, err := r.Run(context.Background(), "US", fetch.Lease{})
	if err != nil {
		t.Fatal(err)
	}
	assertChart(t, r.Store.(*store.Store), run, chart)
	for _, cat := range []string{"10", "20"} {
		var want []string
		for _, v := range chart {
			if v.Snippet.CategoryId == cat {
				want = append(want, v.Id)
			}
		}
		got, err := r.Store.(*store.Store).Entries(context.Background(), run.ID, "US", store.KindCategory, cat)
		if err != nil {
			t.Fatal(err)
		}
		if len(want) == 0 || len(got) != len(want) {
			t.Fatalf("category %s: stored %d, want %d (sample videos of that category)", cat, len(got), len(want))
		}
		for i := range want {
			if got[i].VideoID != want[i] || got[i].Rank != i+1 {
				t.Errorf("category %s rank %d: %s, want %s", cat, i+1, got[i].VideoID, want[i])
			}
		}
	}
	var sawCategory int
	for _, req := range emu.Requests() {
		if req.Query.Get("videoCategoryId") != "" {
			sawCategory++
		}
	}
	if sawCategory != 2 || run.Units["units"] != 4 {
		t.Errorf("%d narrowed chart calls, %v units; want 2 calls and 2+2 units", sawCategory, run.Units)
	}
}
