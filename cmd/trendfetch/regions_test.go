package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/trendfetch/trendfetch/internal/regions"
	"github.com/trendfetch/trendfetch/internal/store"
)

// TestRegionsMarksTheConfigured: every supported region is listed with its
// name, the configured ones ($TRENDFETCH_REGIONS) with their index, stagger
// offset and next run, in the table and as JSON.
func TestRegionsMarksTheConfigured(t *testing.T) {
	p := newInproc(t, "schedule:\n  every: 2h\n  stagger: 5m\n", map[string]string{"TRENDFETCH_REGIONS": "JP,US"})
	o := &regionsOptions{io: p.a.ioStreams, schedule: p.a.cfg.Schedule, regions: p.a.cfg.Regions}
	if err := regionsRun(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	table := p.out.String()
	if !strings.Contains(table, "\nUS  ") || !strings.Contains(table, "5m0s") || !strings.HasSuffix(table, "2 of ") && !strings.Contains(table, "\n2 of ") {
		t.Errorf("regions table:\n%s", table)
	}
	p.reset()
	o.asJSON = true
	if err := regionsRun(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	var out []regionOut
	if err := json.Unmarshal(p.out.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	configured := map[string]float64{}
	for _, r := range out {
		if r.Name == "" || r.Code == "GB" && (r.Name != "United Kingdom" || r.Configured) {
			t.Errorf("%+v: want a name (GB: United Kingdom, not configured)", r)
		}
		if r.Configured {
			configured[r.Code] = *r.OffsetSeconds
			if r.NextRun == nil || r.Index == nil {
				t.Errorf("%s: no next run or index", r.Code)
			}
		}
	}
	if len(out) != 106 || len(configured) != 2 || configured["JP"] != 0 || configured["US"] != 300 {
		t.Errorf("%d regions, configured with offsets %v; want JP +0s, US +300s", len(out), configured)
	}
}

// TestRunAllEveryRegionOnDefaults: a config listing every supported region
// and no schedule settings is accepted, and `run --all` captures each of
// them (issue 42: the 3-minute default stagger times 106 regions passed the
// 2-hour interval and every command exited 2).
func TestRunAllEveryRegionOnDefaults(t *testing.T) {
	all := regions.All()
	_, url, e := sampleEnv(t, all...)
	cfg := e.writeConfig("regions: [" + strings.Join(all, ", ") + "]\n")
	if res := e.run("--config", cfg, "--api-endpoint", url, "run", "--all"); res.code != 0 {
		t.Fatalf("run --all over %d regions: exit %d\n%s", len(all), res.code, res.stderr[max(0, len(res.stderr)-2000):])
	}
	runs := storedRuns(t, e.dbPath())
	for _, code := range all {
		if n := countRuns(runs, code, store.OutcomeSuccess); n != 1 {
			t.Errorf("%s: %d successful runs, want 1", code, n)
		}
	}
}
