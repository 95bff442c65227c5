package plan_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/callsite"
	"github.com/trendfetch/trendfetch/internal/config"
	"github.com/trendfetch/trendfetch/internal/plan"
)

// TestPacificDaysOf23And25Hours: the planned day is Google's (midnight to
// midnight in America/Los_Angeles, 23 or 25 hours at DST changes), and its
// runs are the schedule's own ticks: an hourly schedule on wall-clock hours
// (like cron) runs 23 times when clocks spring forward (02:00 does not
// exist) and 24 times when they fall back (01:00 fires once).
func TestPacificDaysOf23And25Hours(t *testing.T) {
	cfg := load(t, "regions: [US]\nschedule:\n  every: 1h\n  timezone: America/Los_Angeles\n")
	for day, want := range map[string]struct {
		hours float64
		runs  int64
	}{"2026-03-08": {23, 23}, "2026-11-01": {25, 24}, "2026-11-24": {24, 24}} {
		d, _ := time.Parse(time.DateOnly, day)
		p, err := plan.Compute(cfg, plan.Options{Day: d.Add(20 * time.Hour)}) // 20:00 UTC is that Pacific day
		if err != nil {
			t.Fatal(err)
		}
		if p.Day != day || p.Hours != want.hours || p.Regions[0].Runs != want.runs {
			t.Errorf("%s: day %s of %gh with %d runs, want %+v", day, p.Day, p.Hours, p.Regions[0].Runs, want)
		}
		// Each run sends 1 to 4 chart pages, at most each 3 times (api.retries 2).
		if u := p.Buckets[0].Units; u.Least != want.runs || u.Most != 3*4*want.runs {
			t.Errorf("%s: units %+v, want least %d most %d", day, u, want.runs, 3*4*want.runs)
		}
	}
}

// load loads the configuration yaml as trendfetch does (no environment, no
// flags) and validates it.
func load(t *testing.T, yaml string) *config.Config {
	t.Helper()
	file := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := config.Load(func(string) (string, bool) { return "", false }, map[string]string{"config": file})
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// compute plans the configuration yaml for the Pacific day of day
// (YYYY-MM-DD).
func compute(t *testing.T, yaml, day string) *plan.Plan {
	t.Helper()
	cfg := load(t, yaml)
	d, _ := time.Parse(time.DateOnly, day)
	p, err := plan.Compute(cfg, plan.Options{Day: d.Add(20 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func unitsOf(t *testing.T, p *plan.Plan, scope string) plan.Range {
	t.Helper()
	for _, b := range p.Buckets {
		if b.Scope == scope && b.Name == callsite.BucketUnits {
			return b.Units
		}
	}
	t.Fatalf("no %s units bucket: %+v", scope, p.Buckets)
	return plan.Range{}
}

// TestAmendedPolicyRefreshesText: under store.policy amended the runs also
// refresh old text with videos.list.refresh, at most store.refresh_per_day
// calls per credential in any 24 hours whatever the regions: none at least
// (no text is old yet), the cap expected, and at most the cap in each 24
// hours the day holds the start of (two in a 25-hour day), each call
// retried api.retries times. The cap is per credential, not per region.
func TestAmendedPolicyRefreshesText(t *testing.T) {
	const base = "regions: [US, GB]\nschedule:\n  every: 1h\n  timezone: America/Los_Angeles\napi:\n  retries: 1\n"
	for _, tc := range []struct {
		store, day string
		want       plan.Range // the refresh calls
	}{
		{"store:\n  policy: amended\n", "2026-11-24", plan.Range{Least: 0, Expected: 20, Most: 2 * 20}},
		{"store:\n  policy: amended\n  refresh_per_day: 7\n", "2026-11-24", plan.Range{Least: 0, Expected: 7, Most: 2 * 7}},
		{"store:\n  policy: amended\n", "2026-11-01", plan.Range{Least: 0, Expected: 21, Most: 2 * 2 * 20}},
		{"store:\n  policy: amended\n", "2026-03-08", plan.Range{Least: 0, Expected: 20, Most: 2 * 20}},
		{"store:\n  policy: amended\n  refresh_per_day: 0\n", "2026-11-24", plan.Range{}},
		{"store:\n  policy: youtube\n", "2026-11-24", plan.Range{}},
		{"store:\n  policy: keep\n", "2026-11-24", plan.Range{}},
	} {
		without := compute(t, base, tc.day)
		p := compute(t, base+tc.store, tc.day)
		var site plan.Range
		for _, s := range p.Sites {
			if s.Method == callsite.VideosListRefresh {
				site = s.Calls
			}
		}
		if site != tc.want {
			t.Errorf("%q on %s: %s calls %+v, want %+v", tc.store, tc.day, callsite.VideosListRefresh, site, tc.want)
		}
		for _, scope := range []string{"config", callsite.PresetGoogle2026} {
			before, after := unitsOf(t, without, scope), unitsOf(t, p, scope)
			if got := (plan.Range{Least: after.Least - before.Least, Expected: after.Expected - before.Expected, Most: after.Most - before.Most}); got != tc.want {
				t.Errorf("%q on %s: %s units bucket grew by %+v, want %+v (1 unit a refresh call)", tc.store, tc.day, scope, got, tc.want)
			}
		}
	}
}

// TestMostCountsRetries: every attempt costs (docs/design.md §3), so the most
// sends each call 1+api.retries times; the least and the expected do not
// change with api.retries.
func TestMostCountsRetries(t *testing.T) {
	const base = "regions: [US]\nschedule:\n  every: 1h\n  timezone: America/Los_Angeles\nsearches:\n  - {q: music, max_pages: 2}\nchannels:\n  enabled: true\ncategories:\n  enabled: true\nstore:\n  policy: amended\n"
	none := compute(t, base+"api:\n  retries: 0\n", "2026-11-24")
	four := compute(t, base+"api:\n  retries: 4\n", "2026-11-24")
	if len(none.Sites) != 6 {
		t.Fatalf("%d call sites, want all 6: %+v", len(none.Sites), none.Sites)
	}
	for i, s := range four.Sites {
		n := none.Sites[i].Calls
		if want := (plan.Range{Least: n.Least, Expected: n.Expected, Most: 5 * n.Most}); s.Calls != want {
			t.Errorf("%s with 4 retries: calls %+v, want %+v (0 retries: %+v)", s.Method, s.Calls, want, n)
		}
	}
	for i, b := range four.Buckets {
		n := none.Buckets[i].Units
		if want := (plan.Range{Least: n.Least, Expected: n.Expected, Most: 5 * n.Most}); b.Units != want {
			t.Errorf("%s %s with 4 retries: units %+v, want %+v", b.Scope, b.Name, b.Units, want)
		}
	}
	// 0 retries: 24 runs of at most 2 search pages.
	for _, s := range none.Sites {
		if s.Method == callsite.SearchList && s.Calls.Most != 24*2 {
			t.Errorf("%s with 0 retries: calls %+v, want most 48", s.Method, s.Calls)
		}
	}
}

// TestShadowBucketApart: a shadow bucket is planned like any other, marked
// shadow, and never makes the plan fail (issue 41 item 3).
func TestShadowBucketApart(t *testing.T) {
	p := compute(t, "regions: [US]\nschedule:\n  every: 1h\nquota:\n  buckets:\n    - {name: tight, limit: 5, window: 24h, shadow: true}\n  costs:\n    videos.list: {units: 1, tight: 1}\n", "2026-11-24")
	var tight *plan.Bucket
	for i, b := range p.Buckets {
		if b.Name == "tight" {
			tight = &p.Buckets[i]
		} else if b.Shadow {
			t.Errorf("bucket %s: shadow, want enforced", b.Name)
		}
	}
	if tight == nil || !tight.Shadow || tight.Verdict != plan.DoesNotFit {
		t.Fatalf("tight = %+v, want a shadow bucket that does not fit", tight)
	}
	if !p.Fits() {
		t.Error("Fits() = false: a shadow bucket must not fail the plan")
	}
}

// TestReserveCounted: this host's outage reserve is taken from a bucket's limit.
func TestReserveCounted(t *testing.T) {
	p := compute(t, "quota:\n  reserve: {units: 500}\n", "2026-11-24")
	if b := p.Buckets[0]; b.Name != "units" || b.Reserve != 500 || b.Limit != 9000 {
		t.Errorf("bucket %+v, want units with reserve 500 and limit 9500 - 500", b)
	}
}
