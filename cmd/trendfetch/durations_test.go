package main

import (
	"strings"
	"testing"
)

// TestDurationsWithDays: 90d/1d work in the config, in flags and in
// crontab --every; prune --older-than 1m is refused as ambiguous.
func TestDurationsWithDays(t *testing.T) {
	e := newEnv(t)
	cfg := e.writeConfig("store:\n  retention: 90d\nstats:\n  track_for: 7d\nregions: [US, GB]\n")
	if res := e.run("--config", cfg, "crontab", "--every", "1d", "--stagger", "5m"); res.code != 0 || !strings.Contains(res.stdout, "\n5 0 * * *") {
		t.Errorf("crontab --every 1d: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	if res := e.run("--config", cfg, "plan"); res.code != 0 {
		t.Errorf("plan with 90d and 7d: exit %d\n%s", res.code, res.stderr)
	}
	res := e.run("prune", "--older-than", "1m")
	if res.code != 2 || !strings.Contains(res.stderr, "minutes, not months") || !strings.Contains(res.stderr, "Try: trendfetch prune --older-than 90d") {
		t.Errorf("prune --older-than 1m: exit %d, want 2 with a hint\n%s", res.code, res.stderr)
	}
	if res := e.run("crontab", "--every", "2 days"); res.code != 2 || !strings.Contains(res.stderr, "90d") {
		t.Errorf("crontab --every '2 days': exit %d\n%s", res.code, res.stderr)
	}
}
