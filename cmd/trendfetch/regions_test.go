package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestRegionsMarksTheConfigured: every supported region is listed, the
// configured ones with their index, stagger offset and next run, in the
// table and as JSON.
func TestRegionsMarksTheConfigured(t *testing.T) {
	p := newInproc(t, "regions: [JP, US]\nschedule:\n  every: 2h\n  stagger: 5m\n", nil)
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
		if r.Configured {
			configured[r.Code] = *r.OffsetSeconds
			if r.NextRun == nil || r.Index == nil {
				t.Errorf("%s: no next run or index", r.Code)
			}
		}
	}
	if len(out) < 100 || len(configured) != 2 || configured["JP"] != 0 || configured["US"] != 300 {
		t.Errorf("%d regions, configured with offsets %v; want JP +0s, US +300s", len(out), configured)
	}
}
