package youtubetest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trendfetch/trendfetch/internal/callsite"
	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
)

// TestDaysAndBatchGetStats replays the recorded 2017 US chart: the trending date changes
// over the control endpoint while serving; the chart and videos:batchGetStats follow it,
// and batchGetStats is counted in its own bucket, not the shared units.
func TestDaysAndBatchGetStats(t *testing.T) {
	srv := youtubetest.New()
	region, dates, err := srv.LoadDaysFile(filepath.Join(youtubetest.DataDir(t), "kaggle_youtube_new_2017", "USvideos.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if region != "US" || len(dates) < 5 || dates[0] != "2017-11-14" || dates[1] != "2017-11-15" {
		t.Fatalf("region %s dates %v", region, dates[:min(5, len(dates))])
	}
	base := srv.StartTest(t)
	svc, err := youtubetest.NewService(context.Background(), base, "k")
	if err != nil {
		t.Fatal(err)
	}
	setDate := func(d string) {
		t.Helper()
		resp, err := http.PostForm(base+youtubetest.ControlPath, url.Values{"date": {d}})
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var got map[string]*string
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != 200 || got["date"] == nil {
			t.Fatalf("set date %s: %d %v %v", d, resp.StatusCode, got, err)
		}
	}
	// Before any date: no chart for the loaded region.
	if _, err := svc.Videos.List([]string{"id"}).Chart("mostPopular").RegionCode("US").Do(); err == nil {
		t.Error("chart served before SetDate")
	}
	setDate("17.14.11")
	day1, err := svc.Videos.List([]string{"statistics"}).Chart("mostPopular").RegionCode("US").MaxResults(50).Do()
	if err != nil {
		t.Fatal(err)
	}
	setDate("2017-11-18")
	if srv.Date() != "2017-11-18" {
		t.Errorf("Date() = %q", srv.Date())
	}
	day5, err := svc.Videos.List([]string{"statistics"}).Chart("mostPopular").RegionCode("US").MaxResults(50).Do()
	if err != nil {
		t.Fatal(err)
	}
	if day1.Items[0].Id == day5.Items[0].Id && day1.Items[0].Statistics.ViewCount == day5.Items[0].Statistics.ViewCount {
		t.Error("the chart did not change with the date")
	}
	// Day 1's first video, asked on day 5: its statistics of its latest row on or before day 5.
	id := day1.Items[0].Id
	want := srv.Chart("US") // day 5's chart
	var onDay5 uint64
	for _, v := range want {
		if v.Id == id {
			onDay5 = v.Statistics.ViewCount
		}
	}
	stats, err := svc.Videos.BatchGetStats().Part("statistics", "contentDetails", "snippet").Id(id, "no-such-id").Do()
	if err != nil {
		t.Fatal(err)
	}
	if len(stats.Items) != 1 || stats.Items[0].Id != id || stats.Items[0].Statistics.ViewCount <= int64(day1.Items[0].Statistics.ViewCount) ||
		(onDay5 != 0 && uint64(stats.Items[0].Statistics.ViewCount) != onDay5) || stats.Items[0].Snippet.PublishTime == "" {
		t.Errorf("batchGetStats on day 5 = %+v (day 1 views %d, day 5 chart views %d)", stats.Items[0].Statistics, day1.Items[0].Statistics.ViewCount, onDay5)
	}
	if u, b := srv.Units("k"), srv.BucketUnits(callsite.BucketStats, "k"); u != 3 || b != 1 {
		t.Errorf("units %d, stats bucket %d; want 3 (videos.list, errors included) and 1", u, b)
	}
	// 51 ids is an error; the control endpoint refuses a date not in the data.
	many := strings.Split(strings.Repeat("x,", 51), ",")[:51]
	if _, err := svc.Videos.BatchGetStats().Part("statistics").Id(many...).Do(); err == nil {
		t.Error("51 ids accepted")
	}
	resp, err := http.PostForm(base+youtubetest.ControlPath, url.Values{"date": {"yesterday"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || srv.Date() != "2017-11-18" {
		t.Errorf("bad date: status %d, date now %s", resp.StatusCode, srv.Date())
	}
}
