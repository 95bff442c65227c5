package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trendfetch/trendfetch/internal/exitcode"
	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
	"github.com/trendfetch/trendfetch/internal/plan"
)

func bucketOf(t *testing.T, p plan.Plan, scope, name string) plan.Bucket {
	t.Helper()
	for _, b := range p.Buckets {
		if b.Scope == scope && b.Name == name {
			return b
		}
	}
	t.Fatalf("no %s bucket %q in the plan: %+v", scope, name, p.Buckets)
	return plan.Bucket{}
}

// TestPlanVerdictsAndExitCodes: a plan that fits exits 0, one whose most
// does not fit warns (and exits 2 with --strict), one whose expected use
// does not fit exits 2; each bucket line names its dominating schedule.
func TestPlanVerdictsAndExitCodes(t *testing.T) {
	planRunOf := func(yaml string, o planOptions) (*inproc, error) {
		p := newInproc(t, yaml, nil)
		o.io, o.cfg, o.log = p.a.ioStreams, p.a.cfg, p.a.log
		return p, planRun(&o)
	}
	fits := "regions: [US, JP, KR]\nschedule:\n  every: 2h\n  regions:\n    JP: \"0 * * * *\"\n    KR: \"0 * * * *\"\n"
	// JP KR run every hour (24 runs x 4 pages), US every 2h (12 x 4).
	if p, err := planRunOf(fits, planOptions{}); err != nil || !strings.Contains(p.out.String(), "JP KR 0 * * * *: 192 of 9,500 units") {
		t.Errorf("plan: %v, want no error and the dominating setting on the units line:\n%s", err, p.out.String())
	}
	p, err := planRunOf(fits, planOptions{asJSON: true})
	var pl plan.Plan
	if err != nil || json.Unmarshal(p.out.Bytes(), &pl) != nil {
		t.Fatalf("plan --json: %v\n%s", err, p.out.String())
	}
	if u := bucketOf(t, pl, "config", "units").Units; u.Least != 12+48 || u.Most != 3*(48+192) {
		t.Errorf("units %+v, want least 60 (a page a run), most 720 (4 pages a run, each sent 3 times: api.retries 2)", u)
	}
	if g := bucketOf(t, pl, "google-2026", "units"); g.Limit != 10_000 {
		t.Errorf("google units limit %d, want 10,000", g.Limit)
	}

	// Stats limited to 100 a day: expected (56) fits, the most (3 x 124) does not.
	tight := "quota:\n  buckets:\n    - {name: units, limit: 9500, window: 24h}\n    - {name: stats, limit: 100, window: 1d}\n"
	if p, err := planRunOf(tight, planOptions{}); err != nil || !strings.Contains(p.out.String(), plan.MostExceeds) || !strings.Contains(p.errOut.String(), `"level":"warn"`) {
		t.Errorf("most over the limit: %v, want no error and a warning\n%s%s", err, p.out.String(), p.errOut.String())
	}
	if _, err := planRunOf(tight, planOptions{strict: true}); exit(err) != exitcode.Usage {
		t.Errorf("--strict with the most over the limit: %v, want exit 2", err)
	}

	// Ten search pages an hour in two regions: 480 search.list calls a day.
	over := "regions: [JP, KR]\nschedule:\n  every: 1h\nsearches:\n  - {q: music, max_pages: 10}\n"
	if p, err := planRunOf(over, planOptions{}); exit(err) != exitcode.Usage || !strings.Contains(p.out.String(), plan.DoesNotFit) || !strings.Contains(p.out.String(), "JP KR every 1h: 480 of 95 units") {
		t.Errorf("search over its bucket: %v, want exit 2 naming JP KR every 1h\n%s", err, p.out.String())
	}
	if _, err := planRunOf(over, planOptions{runsPerDay: 1}); err != nil {
		t.Errorf("--runs-per-day 1: %v, want none (20 search pages fit)", err)
	}
	if _, err := planRunOf(over, planOptions{runsPerDay: -1}); exit(err) != exitcode.Usage {
		t.Errorf("--runs-per-day -1: %v, want a usage error", err)
	}
}

// TestPlanBracketsAReplayedDay replays a day of runs (recorded US charts,
// a new trending date every other run, searches, channels, categories and
// the statistics step) against the emulator: the units every bucket
// recorded lie within the plan's [least, most] for that many runs.
func TestPlanBracketsAReplayedDay(t *testing.T) {
	data := youtubetest.DataDir(t)
	emu := youtubetest.New()
	_, dates, err := emu.LoadDaysFile(filepath.Join(data, "kaggle_youtube_new_2017", "USvideos.csv"))
	if err != nil {
		t.Fatal(err)
	}
	loadRecordedExtras(t, emu, data)
	url := emu.StartTest(t)
	p := newInproc(t, "regions: [US]\nsearches:\n  - {q: python, max_pages: 2}\nchannels:\n  enabled: true\n  refresh: 1d\ncategories:\n  enabled: true\n  refresh: 7d\nstats:\n  every: 0s\n",
		map[string]string{"YOUTUBE_API_KEY": "k"})
	const runs = 8
	for i := 0; i < runs; i++ {
		if err := emu.SetDate(dates[i/2]); err != nil {
			t.Fatal(err)
		}
		p.capture(url, "US")
	}
	recorded, err := openStore(t, p.db).Runs(context.Background(), 100)
	if err != nil || len(recorded) != runs {
		t.Fatalf("runs: %v, %d runs", err, len(recorded))
	}
	spent := map[string]int64{}
	for _, r := range recorded {
		for b, u := range r.Units {
			spent[b] += u
		}
	}
	p.reset()
	var pl plan.Plan
	if err := planRun(&planOptions{io: p.a.ioStreams, cfg: p.a.cfg, runsPerDay: runs, asJSON: true}); err != nil || json.Unmarshal(p.out.Bytes(), &pl) != nil {
		t.Fatalf("plan --runs-per-day 8 --json: %v\n%s", err, p.out.String())
	}
	for _, name := range []string{"units", "search", "stats"} {
		b := bucketOf(t, pl, "config", name)
		if got := spent[name]; got < b.Units.Least || got > b.Units.Most {
			t.Errorf("bucket %s: the day's runs spent %d units, outside the plan's [%d, %d]", name, got, b.Units.Least, b.Units.Most)
		}
		t.Logf("bucket %s: spent %d, plan least %d expected %d most %d", name, spent[name], b.Units.Least, b.Units.Expected, b.Units.Most)
	}
	if spent["stats"] == 0 || spent["search"] == 0 {
		t.Errorf("the replay exercised no statistics or search step: %v", spent)
	}
}

// loadRecordedExtras gives emu the recorded categories, channels and two
// search pages (from data, the shared recorded data directory) that the
// replays of a full configuration ask for.
func loadRecordedExtras(t *testing.T, emu *youtubetest.Server, data string) {
	t.Helper()
	read := func(p string) []byte {
		b, err := os.ReadFile(filepath.Join(data, p))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if err := emu.SetCategories("", read("rsrishav_trending_2020/US_category_id.json")); err != nil {
		t.Fatal(err)
	}
	if err := emu.SetChannels(read("api_json/pyyoutube__channels_info_multiple.json")); err != nil {
		t.Fatal(err)
	}
	if err := emu.SetSearchPages(read("api_json/pyyoutube__search_search_by_keywords_p1.json"), read("api_json/pyyoutube__search_search_by_keywords_p2.json")); err != nil {
		t.Fatal(err)
	}
}
