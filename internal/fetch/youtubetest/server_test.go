package youtubetest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"google.golang.org/api/googleapi"
	"google.golang.org/api/youtube/v3"

	"github.com/trendfetch/trendfetch/internal/callsite"
	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
)

// start serves srv and returns a real youtube/v3 client using key.
func start(t *testing.T, srv *youtubetest.Server, key string) *youtube.Service {
	t.Helper()
	svc, err := youtubetest.NewService(context.Background(), srv.StartTest(t), key)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

func loadUS2018(t *testing.T) []*youtube.Video {
	t.Helper()
	_, videos, err := youtubetest.LoadCSVFile(filepath.Join(youtubetest.DataDir(t), "api_snapshot_2018-11-01", "18.01.11_US_videos.csv"))
	if err != nil {
		t.Fatal(err)
	}
	return videos
}

// apiErr asserts that err is a *googleapi.Error with code and reason.
func apiErr(t *testing.T, err error, code int, reason string) *googleapi.Error {
	t.Helper()
	var gerr *googleapi.Error
	if !errors.As(err, &gerr) {
		t.Fatalf("error %v (%T) is not a *googleapi.Error", err, err)
	}
	if gerr.Code != code || len(gerr.Errors) == 0 || gerr.Errors[0].Reason != reason {
		t.Fatalf("got code %d errors %+v, want %d %s; body %s", gerr.Code, gerr.Errors, code, reason, gerr.Body)
	}
	return gerr
}

func TestPagingUS2018RealClient(t *testing.T) {
	want := loadUS2018(t)
	srv := youtubetest.New()
	srv.SetChart("US", want)
	svc := start(t, srv, "k")
	ctx := context.Background()

	var got []string
	var tokens []string
	pages := 0
	call := svc.Videos.List([]string{"id", "snippet", "statistics"}).Chart("mostPopular").RegionCode("US").MaxResults(50)
	err := call.Pages(ctx, func(r *youtube.VideoListResponse) error {
		pages++
		if r.PageInfo == nil || r.PageInfo.TotalResults != 200 || r.PageInfo.ResultsPerPage != 50 {
			t.Errorf("page %d: pageInfo %+v", pages, r.PageInfo)
		}
		if len(r.Items) != 50 {
			t.Errorf("page %d: %d items", pages, len(r.Items))
		}
		tokens = append(tokens, r.NextPageToken)
		for _, v := range r.Items {
			got = append(got, v.Id)
			if v.Snippet == nil || v.Statistics == nil || v.ContentDetails != nil {
				t.Fatalf("parts not honoured: %+v", v)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if pages != 4 {
		t.Errorf("%d pages, want 4", pages)
	}
	if strings.Join(tokens, ",") != "CDIQAA,CGQQAA,CJYBEAA," {
		t.Errorf("next page tokens %q, want the real API's style and none on the last page", tokens)
	}
	if len(got) != len(want) {
		t.Fatalf("%d ids, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i].Id {
			t.Fatalf("rank %d: id %s, want %s (CSV order)", i+1, got[i], want[i].Id)
		}
	}
	if u := srv.Units("k"); u != 4 {
		t.Errorf("Units(k) = %d, want 4", u)
	}
	if c := srv.Calls(callsite.VideosList); c != 4 {
		t.Errorf("Calls = %d, want 4", c)
	}
	for _, r := range srv.Requests() {
		if r.Query.Has("key") {
			t.Errorf("request log holds the API key: %v", r.Query)
		}
		if r.Status != http.StatusOK {
			t.Errorf("status %d", r.Status)
		}
	}
}

func TestDefaultsPrevTokenAndStats(t *testing.T) {
	srv := youtubetest.New()
	srv.SetChart("us", youtubetest.Sample()) // region is case-insensitive
	svc := start(t, srv, "k")

	first, err := svc.Videos.List([]string{"statistics"}).Chart("mostPopular").RegionCode("US").Do()
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Items) != 5 || first.PageInfo.ResultsPerPage != 5 || first.PageInfo.TotalResults != youtubetest.SampleSize {
		t.Fatalf("default maxResults: %d items, pageInfo %+v", len(first.Items), first.PageInfo)
	}
	if first.NextPageToken != "CAUQAA" || first.PrevPageToken != "" {
		t.Errorf("tokens next %q prev %q, want CAUQAA and none", first.NextPageToken, first.PrevPageToken)
	}
	second, err := svc.Videos.List([]string{"id"}).Chart("mostPopular").RegionCode("US").PageToken(first.NextPageToken).Do()
	if err != nil {
		t.Fatal(err)
	}
	if second.PrevPageToken != "" || second.Items[0].Id != "sample-0006" || second.Items[0].Snippet != nil {
		t.Errorf("second page: prev %q first %+v", second.PrevPageToken, second.Items[0])
	}
	if _, err := svc.Videos.List([]string{"id"}).Chart("mostPopular").RegionCode("US").PageToken("CAUQAQ").Do(); err == nil {
		t.Error("a backward page token was accepted")
	}
	body := fetchRaw(t, srv, "/youtube/v3/videos?part=statistics&chart=mostPopular&regionCode=US&maxResults=10")
	if strings.Contains(body, "dislikeCount") {
		t.Errorf("dislikeCount is served; the API stopped returning it in 2021")
	}
	if !strings.Contains(body, `"kind":"youtube#videoListResponse"`) || !strings.Contains(body, `"likeCount":"200000"`) {
		t.Errorf("unexpected body %s", body)
	}
	// Video 10 has ratings disabled: no likeCount at all.
	if i := strings.Index(body, `"id":"sample-0010"`); i < 0 || strings.Contains(body[i:], "likeCount") {
		t.Errorf("ratings-disabled video 10 has a likeCount: %s", body[max(i, 0):])
	}
	st := first.Items[0].Statistics
	if st.ViewCount != 5_000_000 {
		t.Errorf("viewCount %d", st.ViewCount)
	}
}

// fetchRaw GETs path (with key=k) and returns the body.
func fetchRaw(t *testing.T, srv *youtubetest.Server, path string) string {
	t.Helper()
	url := srv.StartTest(t)
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	res, err := http.Get(url + path + sep + "key=k")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestVideoCategoryFilterAndIDs(t *testing.T) {
	srv := youtubetest.New()
	srv.SetChart("US", youtubetest.Sample())
	srv.SetChart("GB", youtubetest.Sample()[:3])
	extra := youtubetest.Sample()[0]
	extra.Id = "offchart-01"
	srv.AddVideos(extra)
	svc := start(t, srv, "k")

	music, err := svc.Videos.List([]string{"snippet"}).Chart("mostPopular").RegionCode("US").VideoCategoryId("10").MaxResults(50).Do()
	if err != nil {
		t.Fatal(err)
	}
	if len(music.Items) == 0 || int(music.PageInfo.TotalResults) != len(music.Items) {
		t.Fatalf("category 10: %d items, total %d", len(music.Items), music.PageInfo.TotalResults)
	}
	for _, v := range music.Items {
		if v.Snippet.CategoryId != "10" {
			t.Errorf("%s has category %s", v.Id, v.Snippet.CategoryId)
		}
	}

	byID, err := svc.Videos.List([]string{"snippet", "contentDetails"}).Id("sample-0042", "nope-nope-1", "offchart-01", "sample-0002").Do()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, v := range byID.Items {
		ids = append(ids, v.Id)
		if v.ContentDetails == nil || v.ContentDetails.Duration == "" {
			t.Errorf("%s: contentDetails %+v", v.Id, v.ContentDetails)
		}
	}
	if strings.Join(ids, ",") != "sample-0042,offchart-01,sample-0002" || byID.NextPageToken != "" {
		t.Errorf("id lookup returned %v", ids)
	}

	many := make([]string, 51)
	for i := range many {
		many[i] = fmt.Sprintf("sample-%04d", i+1)
	}
	_, err = svc.Videos.List([]string{"id"}).Id(many...).Do()
	apiErr(t, err, 400, "invalidParameter")
}

func TestErrorBodiesRealClient(t *testing.T) {
	ctx := context.Background()
	t.Run("videoChartNotFound", func(t *testing.T) {
		srv := youtubetest.New()
		srv.SetChart("US", youtubetest.Sample())
		svc := start(t, srv, "k")
		_, err := svc.Videos.List([]string{"id"}).Chart("mostPopular").RegionCode("ZZ").Do()
		gerr := apiErr(t, err, 400, "videoChartNotFound")
		if !strings.Contains(gerr.Body, `"domain":"youtube.video"`) || gerr.Message != "The requested video chart is not supported or is not available." {
			t.Errorf("body %s", gerr.Body)
		}
		if srv.Units("k") != 1 {
			t.Errorf("an error costs 1 unit, got %d", srv.Units("k"))
		}
	})
	t.Run("quotaExceeded", func(t *testing.T) {
		srv := youtubetest.New()
		srv.SetChart("US", youtubetest.Sample())
		srv.SetDailyLimit(2)
		svc := start(t, srv, "k")
		for i := 0; i < 2; i++ {
			if _, err := svc.Videos.List([]string{"id"}).Chart("mostPopular").RegionCode("US").Do(); err != nil {
				t.Fatal(err)
			}
		}
		_, err := svc.Videos.List([]string{"id"}).Chart("mostPopular").RegionCode("US").Do()
		gerr := apiErr(t, err, 403, "quotaExceeded")
		if !strings.Contains(gerr.Body, `"domain":"youtube.quota"`) || !strings.Contains(gerr.Message, "exceeded your <a href=\"/youtube/v3/getting-started#quota\">quota</a>") {
			t.Errorf("body %s", gerr.Body)
		}
		if srv.Units("k") != 2 || srv.Calls(callsite.VideosList) != 3 {
			t.Errorf("units %d calls %d, want 2 and 3", srv.Units("k"), srv.Calls(callsite.VideosList))
		}
		// search.list costs 100: it cannot fit either, and another key has its own quota.
		srv.SetDailyLimit(100)
		other := start(t, srv, "other")
		if _, err := other.Search.List([]string{"snippet"}).Q("x").Do(); err != nil {
			t.Fatalf("search with 100 units left: %v", err)
		}
		_, err = other.Videos.List([]string{"id"}).Chart("mostPopular").Do()
		apiErr(t, err, 403, "quotaExceeded")
		if srv.Units("other") != 100 {
			t.Errorf("Units(other) = %d, want 100", srv.Units("other"))
		}
		srv.ResetQuota()
		if _, err := svc.Videos.List([]string{"id"}).Chart("mostPopular").Do(); err != nil {
			t.Errorf("after ResetQuota: %v", err)
		}
	})
	t.Run("keyInvalid", func(t *testing.T) {
		srv := youtubetest.New()
		srv.SetChart("US", youtubetest.Sample())
		srv.SetKeys("good")
		url := srv.StartTest(t)
		for _, key := range []string{"bad", ""} {
			svc, err := youtubetest.NewService(ctx, url, key)
			if err != nil {
				t.Fatal(err)
			}
			_, err = svc.Videos.List([]string{"id"}).Chart("mostPopular").RegionCode("US").Do()
			gerr := apiErr(t, err, 400, "keyInvalid")
			if gerr.Message != "API key not valid. Please pass a valid API key." || !strings.Contains(gerr.Body, `"domain":"usageLimits"`) ||
				!strings.Contains(gerr.Body, `"status":"INVALID_ARGUMENT"`) || !strings.Contains(gerr.Body, `"reason":"API_KEY_INVALID"`) {
				t.Errorf("body %s", gerr.Body)
			}
			if strings.Contains(gerr.Body, "bad") {
				t.Errorf("error body echoes the key")
			}
		}
		good, err := youtubetest.NewService(ctx, url, "good")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := good.Videos.List([]string{"id"}).Chart("mostPopular").RegionCode("US").Do(); err != nil {
			t.Fatal(err)
		}
		if srv.Units("bad") != 0 || srv.Units("good") != 1 || srv.TotalCalls() != 3 {
			t.Errorf("units bad %d good %d total calls %d", srv.Units("bad"), srv.Units("good"), srv.TotalCalls())
		}
	})
	t.Run("parameters", func(t *testing.T) {
		srv := youtubetest.New()
		srv.SetChart("US", youtubetest.Sample())
		svc := start(t, srv, "k")
		_, err := svc.Videos.List([]string{"id"}).Chart("mostPopular").MaxResults(51).Do()
		apiErr(t, err, 400, "invalidParameter")
		_, err = svc.Videos.List([]string{"id"}).Chart("mostPopular").PageToken("garbage").Do()
		apiErr(t, err, 400, "invalidPageToken")
		_, err = svc.Videos.List([]string{"snippet", "bogus"}).Chart("mostPopular").Do()
		apiErr(t, err, 400, "unknownPart")
		_, err = svc.Videos.List([]string{"id"}).Do()
		apiErr(t, err, 400, "missingRequiredParameter")
		if srv.Units("k") != 4 {
			t.Errorf("invalid requests cost 1 unit each: %d", srv.Units("k"))
		}
	})
}

func TestFailNextAndHook(t *testing.T) {
	srv := youtubetest.New()
	srv.SetChart("US", youtubetest.Sample())
	srv.FailNext(callsite.VideosList, 2, 503)
	srv.FailNext("", 1, 500)
	svc := start(t, srv, "k")
	list := func() error {
		_, err := svc.Videos.List([]string{"id"}).Chart("mostPopular").RegionCode("US").Do()
		return err
	}
	apiErr(t, list(), 503, "backendError")
	apiErr(t, list(), 503, "backendError")
	apiErr(t, list(), 500, "backendError")
	if err := list(); err != nil {
		t.Fatalf("after injected failures: %v", err)
	}
	if srv.Units("k") != 4 {
		t.Errorf("units %d, want 4", srv.Units("k"))
	}

	srv.SetHook(func(w http.ResponseWriter, r *http.Request) bool {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(200)
		_, _ = io.WriteString(w, `{"kind":"youtube#videoListResponse","items":[{"id":`) // truncated
		return true
	})
	if err := list(); err == nil {
		t.Error("truncated body decoded without error")
	}
	srv.SetHook(nil)
	if err := list(); err != nil {
		t.Fatal(err)
	}
}

func TestETagOfContent(t *testing.T) {
	srv := youtubetest.New()
	srv.SetChart("US", youtubetest.Sample())
	svc := start(t, srv, "k")
	r, err := svc.Videos.List([]string{"id"}).Chart("mostPopular").RegionCode("US").Do()
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Etag) != 27 {
		t.Fatalf("etag %q", r.Etag)
	}
	again, err := svc.Videos.List([]string{"id"}).Chart("mostPopular").RegionCode("US").Do()
	if err != nil || again.Etag != r.Etag {
		t.Fatalf("same chart: %v, etag %q, want %q", err, again.Etag, r.Etag)
	}
	srv.SetChart("US", youtubetest.Sample()[1:])
	if changed, err := svc.Videos.List([]string{"id"}).Chart("mostPopular").RegionCode("US").Do(); err != nil || changed.Etag == r.Etag {
		t.Fatalf("changed chart: %v, etag unchanged %q", err, r.Etag)
	}
}

func TestConcurrentUnitsExact(t *testing.T) {
	srv := youtubetest.New()
	srv.SetChart("US", youtubetest.Sample())
	srv.SetDailyLimit(50)
	svc := start(t, srv, "k")
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, denied := 0, 0
	for i := 0; i < 80; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := svc.Videos.List([]string{"id"}).Chart("mostPopular").RegionCode("US").Do()
			mu.Lock()
			defer mu.Unlock()
			var gerr *googleapi.Error
			switch {
			case err == nil:
				ok++
			case errors.As(err, &gerr) && gerr.Code == 403:
				denied++
			default:
				t.Error(err)
			}
		}()
		if i == 40 {
			srv.SetChart("US", youtubetest.Sample()) // concurrent writer
		}
	}
	wg.Wait()
	if ok != 50 || denied != 30 || srv.Units("k") != 50 || srv.Calls(callsite.VideosList) != 80 {
		t.Errorf("ok %d denied %d units %d calls %d; want 50 30 50 80", ok, denied, srv.Units("k"), srv.Calls(callsite.VideosList))
	}
}

func TestRecordedCategoriesSearchChannels(t *testing.T) {
	data := youtubetest.DataDir(t)
	read := func(rel string) []byte {
		b, err := os.ReadFile(filepath.Join(data, rel))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	srv := youtubetest.New()
	if err := srv.SetCategories("US", read("rsrishav_trending_2020/US_category_id.json")); err != nil {
		t.Fatal(err)
	}
	if err := srv.SetCategories("", read("rsrishav_trending_2020/nonUS_category_id.json")); err != nil {
		t.Fatal(err)
	}
	if err := srv.SetCategories("GB", read("kaggle_youtube_new_2017/GB_category_id.json")); err != nil {
		t.Fatal(err)
	}
	if err := srv.SetSearchPages(read("api_json/pyyoutube__search_search_by_keywords_p1.json"), read("api_json/pyyoutube__search_search_by_keywords_p2.json")); err != nil {
		t.Fatal(err)
	}
	if err := srv.SetChannels(read("api_json/pyyoutube__channels_info_multiple.json")); err != nil {
		t.Fatal(err)
	}
	if err := srv.SetCategories("US", []byte(`{"kind":"youtube#videoListResponse","items":[]}`)); err == nil {
		t.Error("SetCategories accepted a video list")
	}
	svc := start(t, srv, "k")

	for region, want := range map[string]int{"US": 32, "DE": 31, "GB": 31} {
		cats, err := svc.VideoCategories.List([]string{"snippet"}).RegionCode(region).Do()
		if err != nil {
			t.Fatal(err)
		}
		if len(cats.Items) != want || cats.Items[0].Snippet.Title != "Film & Animation" {
			t.Errorf("%s: %d categories, want %d", region, len(cats.Items), want)
		}
	}
	if none, err := svc.VideoCategories.List([]string{"snippet"}).Id("29").Do(); err != nil || len(none.Items) != 0 {
		t.Errorf("categories by id: %v %+v, want none", err, none)
	}

	var titles int
	err := svc.Search.List([]string{"snippet"}).Q("anything").MaxResults(25).Pages(context.Background(), func(r *youtube.SearchListResponse) error {
		titles += len(r.Items)
		return nil
	})
	if err != nil || titles != 50 {
		t.Errorf("search pages: %v, %d items, want 50", err, titles)
	}
	if srv.Units("k") != 3+1+200 {
		t.Errorf("units %d, want 204 (search.list costs 100)", srv.Units("k"))
	}

	// The videos a search finds are served by videos.list id=, built from
	// their search results (snippet; no statistics).
	found, err := svc.Videos.List([]string{"snippet", "statistics"}).Id("gQ_1zX-F_No", "not-a-hit00").Do()
	if err != nil || len(found.Items) != 1 || found.Items[0].Id != "gQ_1zX-F_No" || found.Items[0].Kind != "youtube#video" ||
		found.Items[0].Snippet == nil || found.Items[0].Snippet.ChannelTitle != "Jamie O'Brien" || found.Items[0].Statistics != nil {
		t.Errorf("videos.list id= of a search hit: %v %+v", err, found)
	}

	ch, err := svc.Channels.List([]string{"statistics"}).Id("UC_x5XG1OV2P6uZZ5FSM9Ttw", "UCunknown").Do()
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.Items) != 1 || ch.Items[0].Statistics == nil || ch.Items[0].Snippet != nil {
		t.Errorf("channels: %+v", ch.Items)
	}
}

func TestSample(t *testing.T) {
	a, b := youtubetest.Sample(), youtubetest.Sample()
	if len(a) != youtubetest.SampleSize || a[0] == b[0] {
		t.Fatalf("Sample: %d videos, fresh values: %v", len(a), a[0] != b[0])
	}
	seen := map[string]bool{}
	for _, v := range a {
		if len(v.Id) != 11 || seen[v.Id] || !strings.Contains(v.Snippet.Title, "synthetic") {
			t.Errorf("sample video %q %q", v.Id, v.Snippet.Title)
		}
		seen[v.Id] = true
	}
	srv := youtubetest.New()
	if err := srv.SetCategories("", youtubetest.SampleCategories()); err != nil {
		t.Fatal(err)
	}
}

// Example shows the emulator serving the built-in sample to the real client.
func Example() {
	srv := youtubetest.New()
	srv.SetChart("US", youtubetest.Sample())
	ts := httptest.NewServer(srv)
	defer ts.Close()

	ctx := context.Background()
	svc, err := youtubetest.NewService(ctx, ts.URL, "demo-key")
	if err != nil {
		panic(err)
	}
	resp, err := svc.Videos.List([]string{"snippet"}).Chart("mostPopular").RegionCode("US").MaxResults(50).Do()
	if err != nil {
		panic(err)
	}
	fmt.Println(len(resp.Items), resp.Items[0].Id, resp.NextPageToken, srv.Units("demo-key"))
	// Output: 50 sample-0001 CDIQAA 1
}
