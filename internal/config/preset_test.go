package config

import (
	"strings"
	"testing"
)

func TestPresetGoogle2026(t *testing.T) {
	c := parseValid(t, "quota:\n  preset: google-2026\n")
	buckets, costs, err := c.Limits()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"units": 10_000, "search": 100, "stats": 10_000}
	if len(buckets) != 3 {
		t.Fatalf("buckets %+v", buckets)
	}
	for _, b := range buckets {
		if !b.Calendar || want[b.Name] != b.Limit {
			t.Errorf("bucket %+v, want calendar with limit %d", b, want[b.Name])
		}
	}
	if cs := costs["search.list"]; len(cs) != 1 || cs[0].Bucket != "search" || cs[0].Units != 1 {
		t.Errorf("search.list charges %+v, want 1 in search only (since 2026-06-01)", cs)
	}
	if cs := costs["videos.batchGetStats"]; len(cs) != 1 || cs[0].Bucket != "stats" || cs[0].Units != 1 {
		t.Errorf("videos.batchGetStats charges %+v", cs)
	}
	if cs := costs["videos.list"]; len(cs) != 1 || cs[0].Bucket != "units" || cs[0].Units != 1 {
		t.Errorf("videos.list charges %+v", cs)
	}
	if c.Quota.Preset != "google-2026" || Default().Quota.Preset != "classic" {
		t.Errorf("preset names %q / %q", c.Quota.Preset, Default().Quota.Preset)
	}
}

func TestPresetHeadroomAndOverrides(t *testing.T) {
	c := parseValid(t, "quota:\n  preset: google-2026\n  headroom: 5\n")
	buckets, _, _ := c.Limits()
	if buckets[0].Limit != 9_500 || buckets[1].Limit != 95 || buckets[2].Limit != 9_500 {
		t.Errorf("5%% headroom: %+v", buckets)
	}
	// Given buckets override the preset's; its costs stay.
	c = parseValid(t, "quota:\n  preset: google-2026\n  buckets:\n    - {name: units, limit: 50, window: 1h}\n    - {name: search, limit: 5, window: 1h}\n    - {name: stats, limit: 5, window: 1h}\n")
	buckets, costs, _ := c.Limits()
	if buckets[0].Limit != 50 || buckets[0].Calendar || len(costs["search.list"]) != 1 {
		t.Errorf("given buckets: %+v, search.list %+v", buckets, costs["search.list"])
	}
	for _, tc := range []struct{ yaml, field string }{
		{"quota:\n  preset: google-2025\n", "quota.preset"},
		{"quota:\n  headroom: 5\n", "quota.headroom"},
		{"quota:\n  preset: google-2026\n  headroom: 95\n", "quota.headroom"},
	} {
		_, err := parse(strings.NewReader(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%q: err %v, want one naming %s", tc.yaml, err, tc.field)
		}
	}
}
