package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/trendfetch/trendfetch/internal/exitcode"
	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
	"github.com/trendfetch/trendfetch/internal/store"
)

// chartOut is `trendfetch chart --json`.
type chartOut struct {
	Capture store.Capture `json:"capture"`
	Entries []store.Entry `json:"entries"`
}

// TestChartAndVideoCommands: a denied run leaves a partial capture, the next
// (complete) one is the latest; `chart` and `video` show both with the
// statistics the API gave, in JSON, CSV and human form.
func TestChartAndVideoCommands(t *testing.T) {
	chart := usChart(t)
	emu := youtubetest.New()
	emu.SetChart("US", chart)
	url := emu.StartTest(t)
	p := newInproc(t, "", map[string]string{"YOUTUBE_API_KEY": "k"})
	denied := p.writeConfig(`
quota:
  buckets:
    - {name: units, limit: 2, window: 1h}
  costs:
    videos.list: {units: 1}
`)
	if res := p.run("--config", denied, "--api-endpoint", url, "run", "--region", "US"); res.code != 75 {
		t.Fatalf("denied run: exit %d\n%s", res.code, res.stderr)
	}
	if res := p.run("chart", "--region", "us", "--json"); res.code == 0 || !strings.Contains(res.stderr, "no complete chart capture of US") {
		t.Errorf("chart with only a partial capture: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	var partial chartOut
	res := p.run("chart", "--region", "us", "--partial", "--json")
	if res.code != 0 {
		t.Fatalf("chart --partial exit %d: %s", res.code, res.stderr)
	}
	if err := json.Unmarshal([]byte(res.stdout), &partial); err != nil {
		t.Fatalf("chart --json: %v\n%s", err, res.stdout)
	}
	if partial.Capture.Complete || len(partial.Entries) != 100 || partial.Capture.Kind != "chart" {
		t.Errorf("after a denial: capture %+v with %d entries, want partial with 100", partial.Capture, len(partial.Entries))
	}
	if res := p.run("--api-endpoint", url, "run", "--region", "US"); res.code != 0 {
		t.Fatalf("run exit %d\n%s", res.code, res.stderr)
	}
	var full chartOut
	res = p.run("chart", "--region", "US", "--json")
	if err := json.Unmarshal([]byte(res.stdout), &full); err != nil || res.code != 0 {
		t.Fatalf("chart --json: exit %d %v\n%s", res.code, err, res.stdout)
	}
	if !full.Capture.Complete || len(full.Entries) != 200 || full.Capture.RunID == partial.Capture.RunID {
		t.Errorf("latest: capture %+v with %d entries, want the complete one with 200", full.Capture, len(full.Entries))
	}
	for i, en := range full.Entries {
		v := chart[i]
		if en.Rank != i+1 || en.VideoID != v.Id || en.Views == nil || uint64(*en.Views) != v.Statistics.ViewCount {
			t.Fatalf("entry %d = %+v, want %s with %d views", i, en, v.Id, v.Statistics.ViewCount)
		}
	}
	if !strings.Contains(res.stdout, `"like_count": null`) && !strings.Contains(res.stdout, `"comment_count": null`) {
		t.Logf("no unknown statistic in this chart (fine)")
	}
	res = p.run("chart", "--region", "US", "--run", jsonNum(partial.Capture.RunID), "--csv")
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	if res.code != 0 || len(lines) != 101 || lines[0] != "rank,video_id,title,channel_title,view_count,like_count,comment_count" {
		t.Errorf("chart --run --csv: exit %d, %d lines, header %q", res.code, len(lines), lines[0])
	}
	res = p.run("chart", "--region", "US", "--run", jsonNum(partial.Capture.RunID))
	if res.code != 0 || !strings.Contains(res.stdout, "PARTIAL") || !strings.Contains(res.stdout, "UTC") {
		t.Errorf("human chart of the partial run (exit %d):\n%s", res.code, res.stdout)
	}

	id := chart[0].Id
	res = p.run("video", id, "--json")
	var h store.VideoHistory
	if err := json.Unmarshal([]byte(res.stdout), &h); err != nil || res.code != 0 {
		t.Fatalf("video --json: exit %d %v\n%s", res.code, err, res.stdout)
	}
	if len(h.Appearances) != 2 || len(h.Points) != 2 || len(h.Regions) != 1 || h.Regions[0].BestRank != 1 || h.Regions[0].Days != 1 {
		t.Errorf("video history: %+v", h)
	}
	if !strings.Contains(res.stdout, `"id": "`+id+`"`) || !strings.Contains(res.stdout, `"best_rank": 1`) {
		t.Errorf("video --json keys:\n%s", res.stdout)
	}
	res = p.run("video", id)
	if res.code != 0 || !strings.Contains(res.stdout, chart[0].Snippet.Title) || !strings.Contains(res.stdout, "chart (partial)") {
		t.Errorf("human video output (exit %d):\n%s", res.code, res.stdout)
	}

	// Export: the partial capture is left out of --every day, kept with --every capture.
	res = p.run("export", "--format", "jsonl")
	if n := strings.Count(res.stdout, "\n"); res.code != 0 || n != 200 || strings.Contains(res.stdout, `"complete":false`) {
		t.Errorf("export --every day: exit %d, %d rows (want 200, complete only)\n%s", res.code, n, res.stderr)
	}
	out := p.dir + "/all.csv"
	res = p.run("export", "--every", "capture", "--region", "us", "--output", out)
	b, err := os.ReadFile(out)
	if res.code != 0 || err != nil {
		t.Fatalf("export --output: exit %d %v\n%s", res.code, err, res.stderr)
	}
	head, _, _ := strings.Cut(string(b), "\n")
	if head != "video_id,trending_date,title,channel_title,category_id,publish_time,tags,views,likes,dislikes,comment_count,thumbnail_link,comments_disabled,ratings_disabled,video_error_or_removed,description,captured_at,rank" {
		t.Errorf("youtube-new header: %s", head)
	}
	res = p.run("export", "--layout", "trending-daily", "--every", "capture", "--region", "GB")
	if head, _, _ := strings.Cut(res.stdout, "\n"); res.code != 0 || strings.Count(res.stdout, "\n") != 1 ||
		head != "video_id,title,publishedAt,channelId,channelTitle,categoryId,trending_date,tags,view_count,likes,dislikes,comment_count,thumbnail_link,comments_disabled,ratings_disabled,description,captured_at,rank" {
		t.Errorf("trending-daily of a region without captures: exit %d\n%s", res.code, res.stdout)
	}

	res = p.run("prune", "--older-than", "1h", "--dry-run")
	if res.code != 0 || !strings.HasPrefix(res.stdout, "would remove 0 captures (0 entries), 0 stats samples, 0 text versions, 0 videos' text, 0 videos (older than ") {
		t.Errorf("prune --dry-run: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	res = p.run("prune", "--older-than", "1ns", "--json")
	var rep store.PruneReport
	if err := json.Unmarshal([]byte(res.stdout), &rep); err != nil || res.code != 0 || rep.Captures != 2 || rep.Entries != 300 || rep.Videos != 200 {
		t.Errorf("prune everything: exit %d %+v %v\n%s", res.code, rep, err, res.stderr)
	}

	for _, args := range [][]string{
		{"prune", "--older-than", "0"},
		{"prune", "--policy", "forever"},
		{"prune", "--as-of", "next week"},
		{"prune", "--older-than", "1h", "--as-of", "2026-01-01"},
		{"prune", "--older-than", "-5d"},
		{"export", "--format", "xml"},
		{"export", "--layout", "kaggle"},
		{"export", "--every", "week"},
		{"export", "--since", "last week"},
		{"export", "--region", "XX"},
		{"chart"},
		{"chart", "--region", "XX"},
		{"chart", "--region", "US", "--at", "yesterday"},
		{"chart", "--region", "US", "--kind", "category"},
		{"chart", "--region", "US", "--kind", "nope"},
		{"chart", "--region", "US", "--at", "2026-01-01", "--run", "1"},
		{"chart", "--region", "US", "--json", "--csv"},
		{"video"},
	} {
		if res := p.run(args...); res.code != 2 || res.stderr == "" {
			t.Errorf("%v: exit %d, stderr %q; want 2 and a message", args, res.code, res.stderr)
		}
	}
	if res := p.run("chart", "--region", "GB"); res.code != exitcode.NotFound || !strings.Contains(res.stderr, "no complete chart capture of GB") {
		t.Errorf("chart of a region never fetched: exit %d, %q", res.code, res.stderr)
	}
}

func jsonNum(n int64) string { b, _ := json.Marshal(n); return string(b) }

// TestRetentionOnRun: with store.retention set, a run first prunes what is
// older (here everything stored by an earlier run, via a tiny retention).
func TestRetentionOnRun(t *testing.T) {
	emu := youtubetest.New()
	emu.SetChart("US", youtubetest.Sample())
	url := emu.StartTest(t)
	p := newInproc(t, "", map[string]string{"YOUTUBE_API_KEY": "k"})
	if res := p.run("--api-endpoint", url, "run", "--region", "US"); res.code != 0 {
		t.Fatalf("run: exit %d\n%s", res.code, res.stderr)
	}
	cfg := p.writeConfig("store:\n  retention: 1ns\n")
	res := p.run("--config", cfg, "--api-endpoint", url, "run", "--region", "US")
	if res.code != 0 || !strings.Contains(res.stderr, "store.retention: pruned") || !strings.Contains(res.stderr, `"captures":1`) {
		t.Fatalf("run with retention: exit %d\n%s", res.code, res.stderr)
	}
	var c chartOut
	res = p.run("chart", "--region", "US", "--json")
	if err := json.Unmarshal([]byte(res.stdout), &c); err != nil || c.Capture.RunID != 2 || len(c.Entries) != youtubetest.SampleSize {
		t.Errorf("chart after retention: %+v %v\n%s", c.Capture, err, res.stderr)
	}
	if res := p.run("--config", p.writeConfig("store:\n  retention: -1h\n"), "runs"); res.code != 2 || !strings.Contains(res.stderr, "store.retention") {
		t.Errorf("negative retention: exit %d %s", res.code, res.stderr)
	}
}
