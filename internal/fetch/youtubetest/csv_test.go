package youtubetest_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trendfetch/trendfetch/internal/callsite"
	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
)

// Row counts per recorded file, from the notes beside the recorded data (docs/design.md §7).
var provenanceRows = map[string]int{
	"api_snapshot_2018-11-01/18.01.11_BR_videos.csv":      200,
	"api_snapshot_2018-11-01/18.01.11_CA_videos.csv":      84,
	"api_snapshot_2018-11-01/18.01.11_DE_videos.csv":      200,
	"api_snapshot_2018-11-01/18.01.11_FR_videos.csv":      200,
	"api_snapshot_2018-11-01/18.01.11_GB_videos.csv":      77,
	"api_snapshot_2018-11-01/18.01.11_IN_videos.csv":      200,
	"api_snapshot_2018-11-01/18.01.11_JP_videos.csv":      200,
	"api_snapshot_2018-11-01/18.01.11_KR_videos.csv":      200,
	"api_snapshot_2018-11-01/18.01.11_MX_videos.csv":      199,
	"api_snapshot_2018-11-01/18.01.11_RU_videos.csv":      200,
	"api_snapshot_2018-11-01/18.01.11_US_videos.csv":      200,
	"kaggle_youtube_new_2017/USvideos.csv":                3000,
	"kaggle_youtube_new_2017/FRvideos.csv":                3398,
	"kaggle_youtube_new_2017/CAvideos.csv":                600,
	"kaggle_youtube_new_2017/GBvideos.csv":                598,
	"rsrishav_trending_2020/US_youtube_trending_data.csv": 800,
	"rsrishav_trending_2020/GB_youtube_trending_data.csv": 800,
	"rsrishav_trending_2020/DE_youtube_trending_data.csv": 600,
	"rsrishav_trending_2020/FR_youtube_trending_data.csv": 799,
	"rsrishav_trending_2020/IN_youtube_trending_data.csv": 697,
	"rsrishav_trending_2020/BR_youtube_trending_data.csv": 800,
	"rsrishav_trending_2020/CA_youtube_trending_data.csv": 800,
	"rsrishav_trending_2020/JP_youtube_trending_data.csv": 600,
	"rsrishav_trending_2020/KR_youtube_trending_data.csv": 965,
	"rsrishav_trending_2020/MX_youtube_trending_data.csv": 800,
	"rsrishav_trending_2020/RU_youtube_trending_data.csv": 600,
}

// TestLoadEveryRecordedRow loads every trending date of every recorded CSV and checks that
// the rows add up to the counts noted beside the data, so no row is lost or rejected.
func TestLoadEveryRecordedRow(t *testing.T) {
	data := youtubetest.DataDir(t)
	files, err := filepath.Glob(filepath.Join(data, "*", "*.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(provenanceRows) {
		t.Errorf("found %d CSV files under %s, PROVENANCE.md lists %d", len(files), data, len(provenanceRows))
	}
	for _, path := range files {
		rel, _ := filepath.Rel(data, path)
		rel = filepath.ToSlash(rel)
		t.Run(rel, func(t *testing.T) {
			t.Parallel()
			want, ok := provenanceRows[rel]
			if !ok {
				t.Fatalf("%s is not in PROVENANCE.md", rel)
			}
			region, ok := youtubetest.RegionFromFileName(path)
			if !ok {
				t.Fatalf("no region in %s", rel)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			dates, charts, err := youtubetest.LoadCSVCharts(f, region)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			total := 0
			for _, d := range dates {
				videos := charts[d]
				if len(videos) == 0 || len(videos) > callsite.ChartMax {
					t.Errorf("date %s: %d videos", d, len(videos))
				}
				for i, v := range videos {
					if v.Id == "" || v.Snippet == nil || v.Snippet.Title == "" || v.Snippet.ChannelId == "" || v.Statistics == nil {
						t.Fatalf("date %s rank %d: incomplete video %+v", d, i+1, v)
					}
				}
				total += len(videos)
			}
			if total != want {
				t.Errorf("loaded %d rows over %d dates, PROVENANCE.md says %d", total, len(dates), want)
			}
		})
	}
}

func TestLoadSnapshot2018(t *testing.T) {
	data := youtubetest.DataDir(t)
	for rel, want := range provenanceRows {
		if !strings.HasPrefix(rel, "api_snapshot_2018-11-01/") {
			continue
		}
		region, videos, err := youtubetest.LoadCSVFile(filepath.Join(data, rel))
		if err != nil {
			t.Fatal(err)
		}
		if len(videos) != want {
			t.Errorf("%s: %d videos, want %d", rel, len(videos), want)
		}
		if !strings.Contains(rel, "_"+region+"_") {
			t.Errorf("%s: region %q", rel, region)
		}
	}
	region, videos, err := youtubetest.LoadCSVFile(filepath.Join(data, "api_snapshot_2018-11-01/18.01.11_US_videos.csv"))
	if err != nil {
		t.Fatal(err)
	}
	v := videos[0]
	if region != "US" || v.Id != "U68MJz9DrI4" || v.Snippet.ChannelId != "UCSugZEYrWbzqIWGD195V-YA" ||
		v.Snippet.ChannelTitle != "OfficialGucciMane" || v.Snippet.CategoryId != "10" ||
		v.Snippet.PublishedAt != "2018-10-31T14:17:10.000Z" || v.Snippet.Tags[0] != "officialguccimane" {
		t.Errorf("rank 1 of US 2018 mapped wrongly: region %s, %+v", region, v.Snippet)
	}
	if v.Snippet.Thumbnails == nil || v.Snippet.Thumbnails.Default.Url != "https://i.ytimg.com/vi/U68MJz9DrI4/default.jpg" {
		t.Errorf("thumbnail: %+v", v.Snippet.Thumbnails)
	}
}

func TestLoadKaggle2017(t *testing.T) {
	data := youtubetest.DataDir(t)
	path := filepath.Join(data, "kaggle_youtube_new_2017", "USvideos.csv")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dates, charts, err := youtubetest.LoadCSVCharts(f, "US")
	if err != nil {
		t.Fatal(err)
	}
	if len(dates) != 15 || dates[0] != "17.14.11" || dates[14] != "17.28.11" {
		t.Fatalf("dates = %v, want 15 from 17.14.11 to 17.28.11", dates)
	}
	for _, d := range dates {
		if len(charts[d]) != 200 {
			t.Errorf("date %s: %d videos, want 200", d, len(charts[d]))
		}
	}
	_, videos, err := youtubetest.LoadCSVFile(path)
	if err != nil || len(videos) != 200 || videos[0].Id != charts["17.14.11"][0].Id {
		t.Fatalf("LoadCSVFile: %v, %d videos, want the 200 of the first date", err, len(videos))
	}
	v := videos[0]
	if v.Id != "2kyS6SvSYSE" || v.Snippet.ChannelTitle != "CaseyNeistat" || v.Snippet.CategoryId != "22" {
		t.Errorf("rank 1: %+v", v.Snippet)
	}
	if got, want := v.Snippet.ChannelId, youtubetest.SyntheticChannelID("CaseyNeistat"); got != want || len(got) != 24 || !strings.HasPrefix(got, "UC") {
		t.Errorf("channelId = %q, want synthetic %q (24 chars)", got, want)
	}
	if strings.Contains(v.Snippet.Description, `\n`) || !strings.Contains(v.Snippet.Description, "\n") {
		t.Errorf("description escapes not decoded: %q", v.Snippet.Description[:80])
	}
	if len(v.Snippet.Tags) != 1 || v.Snippet.Tags[0] != "SHANtell martin" {
		t.Errorf("tags = %q", v.Snippet.Tags)
	}
	for _, v := range videos {
		for _, tag := range v.Snippet.Tags {
			if strings.HasPrefix(tag, `"`) || strings.HasSuffix(tag, `"`) {
				t.Fatalf("%s: tag %q still quoted", v.Id, tag)
			}
		}
	}
}

func TestLoadCSVErrors(t *testing.T) {
	const h2018 = "video_id,title,publishedAt,channelId,channelTitle,categoryId,trending_date,tags,view_count,likes,dislikes,comment_count,thumbnail_link,comments_disabled,ratings_disabled,description\n"
	row := func(id, views string) string {
		return id + ",t,2018-10-31T14:17:10.000Z,UCx,ch,10,18.01.11,[none]," + views + ",1,2,3,http://x/default.jpg,False,False,d\n"
	}
	tests := []struct {
		name, in string
		want     []string // substrings of the error
	}{
		{"empty", "", []string{"empty input"}},
		{"unknown header", "a,b,c\n1,2,3\n", []string{"line 1", "unknown header"}},
		{"header only", h2018, []string{"no data rows"}},
		{"bare quote", h2018 + row("a", "1") + "b,t\"x,2018,UC,c,1,18.01.11,[none],1,1,1,1,u,False,False,d\n", []string{"line 3"}},
		{"wrong field count", h2018 + row("a", "1") + "b,only,three\n", []string{"line 3", "wrong number of fields"}},
		{"bad count", h2018 + row("a", "1") + row("b", "12x"), []string{"line 3", "view_count", "12x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dates, _, err := youtubetest.LoadCSVCharts(strings.NewReader(tt.in), "US")
			if err == nil {
				t.Fatalf("no error, got dates %v", dates)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestLoadCSVStatistics(t *testing.T) {
	in := "video_id,title,publishedAt,channelId,channelTitle,categoryId,trending_date,tags,view_count,likes,dislikes,comment_count,thumbnail_link,comments_disabled,ratings_disabled,description\n" +
		`"a","A","2018-10-31T14:17:10.000Z","UCa","ch","10","18.01.11","x|y","100","0","0","0","u","True","False","d"` + "\n" +
		`"b","B","2018-10-31T14:17:10.000Z","UCa","ch","10","18.01.11","[none]","7","0","0","5","u","False","True","d"` + "\n"
	dates, charts, err := youtubetest.LoadCSVCharts(strings.NewReader(in), "US")
	if err != nil {
		t.Fatal(err)
	}
	videos := charts[dates[0]]
	a, _ := json.Marshal(videos[0].Statistics)
	b, _ := json.Marshal(videos[1].Statistics)
	if got := string(a); got != `{"dislikeCount":"0","favoriteCount":"0","likeCount":"0","viewCount":"100"}` {
		t.Errorf("comments disabled: statistics %s", got)
	}
	if got := string(b); got != `{"commentCount":"5","favoriteCount":"0","viewCount":"7"}` {
		t.Errorf("ratings disabled: statistics %s", got)
	}
	if len(videos[0].Snippet.Tags) != 2 || videos[1].Snippet.Tags != nil {
		t.Errorf("tags %q %q", videos[0].Snippet.Tags, videos[1].Snippet.Tags)
	}
}

func TestRegionFromFileName(t *testing.T) {
	for name, want := range map[string]string{
		"18.01.11_US_videos.csv":       "US",
		"/x/y/GBvideos.csv":            "GB",
		"KR_youtube_trending_data.csv": "KR",
		"US_category_id.json":          "",
		"videos.csv":                   "",
		"usvideos.csv":                 "",
		"18.01.11_USA_videos.csv":      "",
	} {
		got, ok := youtubetest.RegionFromFileName(name)
		if got != want || ok != (want != "") {
			t.Errorf("RegionFromFileName(%q) = %q, %v; want %q", name, got, ok, want)
		}
	}
}
