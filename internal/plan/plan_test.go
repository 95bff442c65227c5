package plan_test

import (
	"strings"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/config"
	"github.com/trendfetch/trendfetch/internal/plan"
)

// TestPacificDaysOf23And25Hours: the planned day is Google's (midnight to
// midnight in America/Los_Angeles, 23 or 25 hours at DST changes), and its
// runs are the schedule's own ticks: an hourly schedule on wall-clock hours
// (like cron) runs 23 times when clocks spring forward (02:00 does not
// exist) and 24 times when they fall back (01:00 fires once).
func TestPacificDaysOf23And25Hours(t *testing.T) {
	cfg, err := config.Parse(strings.NewReader("regions: [US]\nschedule:\n  every: 1h\n  timezone: America/Los_Angeles\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
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
		// Each run sends 1 to 4 chart pages.
		if u := p.Buckets[0].Units; u.Least != want.runs || u.Most != 4*want.runs {
			t.Errorf("%s: units %+v, want least %d most %d", day, u, want.runs, 4*want.runs)
		}
	}
}
