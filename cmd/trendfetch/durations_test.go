package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/trendfetch/trendfetch/internal/exitcode"
)

// TestDurationsWithDays: 90d/1d work in the config, in flags and in
// crontab --every; prune --older-than 1m is refused as ambiguous.
func TestDurationsWithDays(t *testing.T) {
	p := newInproc(t, "store:\n  retention: 90d\nstats:\n  track_for: 7d\nregions: [US, GB]\n", nil)
	if err := p.execute("crontab", "--every", "1d", "--stagger", "5m"); err != nil || !strings.Contains(p.out.String(), "\n5 0 * * *") {
		t.Errorf("crontab --every 1d: %v\n%s", err, p.out.String())
	}
	if err := p.execute("plan"); err != nil {
		t.Errorf("plan with 90d and 7d: %v", err)
	}
	err := p.execute("prune", "--older-than", "1m")
	if ue := (*usageError)(nil); !is[*usageError](err) || !strings.Contains(err.Error(), "minutes, not months") || errors.As(err, &ue) && ue.Hint != "trendfetch prune --older-than 90d" {
		t.Errorf("prune --older-than 1m: %v, want a usage error with a hint", err)
	}
	if err := p.execute("crontab", "--every", "2 days"); exit(err) != exitcode.Usage || !strings.Contains(err.Error(), "90d") {
		t.Errorf("crontab --every '2 days': %v", err)
	}
}
