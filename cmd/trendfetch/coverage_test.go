package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/store"
)

// TestCoverageCommand: `coverage` lists the slots of the configured schedule with the runs
// other hosts recorded (captured, running, missed), as JSON and for people (the time zone
// named); bad --since and an unscheduled --region exit 2.
func TestCoverageCommand(t *testing.T) {
	e := newEnv(t)
	cfg := e.writeConfig("database: " + e.dbPath() + "\nregions: [US]\nschedule:\n  every: 1h\n  timezone: UTC\n")
	os.MkdirAll(filepath.Dir(e.dbPath()), 0o755)
	st, err := store.Open(context.Background(), e.dbPath())
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
	res := e.run("--config", cfg, "coverage", "--since", "3h", "--json")
	var c struct {
		Timezone string
		Regions  []struct {
			Totals map[string]int
			Slots  []struct{ Outcome string }
		}
	}
	if err := json.Unmarshal([]byte(res.stdout), &c); res.code != 0 || err != nil || len(c.Regions) != 1 {
		t.Fatalf("coverage --json: exit %d (%v):\n%s%s", res.code, err, res.stdout, res.stderr)
	}
	if tot := c.Regions[0].Totals; tot["captured"] != 1 || tot["missed"] != 1 || tot["running"] != 1 || len(c.Regions[0].Slots) != 3 || c.Timezone != "UTC" {
		t.Errorf("coverage --json: %s", res.stdout)
	}
	res = e.run("--config", cfg, "coverage", "--since", "3h")
	for _, want := range []string{"times in UTC", "fetch-b", "whole", "missed", "no run started", "totals: captured 1, denied 0, failed 0, interrupted 0, running 1, missed 1"} {
		if res.code != 0 || !strings.Contains(res.stdout, want) {
			t.Errorf("coverage: exit %d, no %q in:\n%s%s", res.code, want, res.stdout, res.stderr)
		}
	}
	for _, args := range [][]string{{"--since", "soon"}, {"--since", "-1h"}, {"--region", "JP"}} {
		if res = e.run(append([]string{"--config", cfg, "coverage"}, args...)...); res.code != 2 || !strings.Contains(res.stderr, args[1]) {
			t.Errorf("coverage %v: exit %d, stderr %s", args, res.code, res.stderr)
		}
	}
}
