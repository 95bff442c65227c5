package main

import (
	"cmp"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/exitcode"
	"github.com/trendfetch/trendfetch/internal/store"
)

// TestCoverageCommand: `coverage` lists the slots of the configured schedule with the runs
// other hosts recorded (captured, running, missed), as JSON and for people (the time zone
// named); bad --since and an unscheduled --region are usage errors (exit 2).
func TestCoverageCommand(t *testing.T) {
	p := newInproc(t, "regions: [US]\nschedule:\n  every: 1h\n  timezone: UTC\n", nil)
	st, err := store.Open(context.Background(), p.db)
	if err != nil {
		t.Fatal(err)
	}
	ctx, tick := context.Background(), time.Now().UTC().Truncate(time.Hour)
	id, err := st.StartRun(ctx, store.Run{Credential: "default", Region: "US", StartedAt: tick.Add(-2*time.Hour + 5*time.Second), Host: "fetch-b"})
	if err == nil {
		err = st.FinishRun(ctx, store.Run{ID: id, Outcome: store.OutcomeSuccess, FinishedAt: tick.Add(-2*time.Hour + time.Minute)})
	}
	if err == nil {
		_, err = st.StartRun(ctx, store.Run{Credential: "default", Region: "US", StartedAt: tick, Host: "fetch-a"})
	}
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	coverage := func(o coverageOptions) error {
		p.reset()
		o.io, o.engine = p.a.ioStreams, p.engine()
		return coverageRun(ctx, &o)
	}
	var c struct {
		Timezone string
		Regions  []struct {
			Totals map[string]int
			Slots  []struct{ Outcome string }
		}
	}
	if err := coverage(coverageOptions{since: "3h", asJSON: true}); err != nil || json.Unmarshal(p.out.Bytes(), &c) != nil || len(c.Regions) != 1 {
		t.Fatalf("coverage --json: %v:\n%s", err, p.out.String())
	}
	if tot := c.Regions[0].Totals; tot["captured"] != 1 || tot["missed"] != 1 || tot["running"] != 1 || len(c.Regions[0].Slots) != 3 || c.Timezone != "UTC" {
		t.Errorf("coverage --json: %s", p.out.String())
	}
	err = coverage(coverageOptions{since: "3h"})
	for _, want := range []string{"times in UTC", "fetch-b", "whole", "missed", "no run started", "totals: captured 1, denied 0, failed 0, interrupted 0, running 1, missed 1"} {
		if err != nil || !strings.Contains(p.out.String(), want) {
			t.Errorf("coverage: %v, no %q in:\n%s", err, want, p.out.String())
		}
	}
	for _, o := range []coverageOptions{{since: "soon"}, {since: "-1h"}, {since: "3h", region: "JP"}, {since: "3h", region: "XX"}} {
		want := cmp.Or(o.region, o.since)
		if err := coverage(o); exit(err) != exitcode.Usage || !strings.Contains(err.Error(), want) {
			t.Errorf("coverage %+v: %v (exit %d), want exit 2 naming the flag's value", o, err, exit(err))
		}
	}
}
