package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/trendfetch/trendfetch/internal/regions"
)

func parseValid(t *testing.T, yaml string) *Config {
	t.Helper()
	cfg, err := parse(strings.NewReader(yaml))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	return cfg
}

func TestScheduleDefaults(t *testing.T) {
	cfg := parseValid(t, "regions: [US, GB, JP]\n")
	s := cfg.Schedule
	if s.Every.Std() != 2*time.Hour || s.StaggerStep() != 3*time.Minute || s.Concurrency != 1 ||
		s.Grace.Std() != 30*time.Second || s.LogDir != "/var/log/trendfetch" || s.Cron != "" {
		t.Errorf("defaults = %+v (stagger %s)", s, s.StaggerStep())
	}
	plan, err := s.Plan(cfg.Regions)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		region string
		offset time.Duration
		spec   string
	}{{"US", 0, "every 2h0m0s"}, {"GB", 3 * time.Minute, "every 2h0m0s +3m0s"}, {"JP", 6 * time.Minute, "every 2h0m0s +6m0s"}}
	for i, w := range want {
		p := plan[i]
		if p.Region != w.region || p.Offset != w.offset || p.Spec != w.spec || p.Explicit || p.Index != i {
			t.Errorf("plan[%d] = %+v, want %s at %s (%s)", i, p, w.region, w.offset, w.spec)
		}
	}
	// An explicit 0s stagger is kept, not replaced by the default.
	cfg = parseValid(t, "regions: [US, GB]\nschedule:\n  stagger: 0s\n")
	if cfg.Schedule.StaggerStep() != 0 {
		t.Errorf("stagger 0s became %s", cfg.Schedule.StaggerStep())
	}
}

// TestScheduleDefaultStaggerFitsEveryRegion: every supported region on
// default settings validates (issue 42), its stagger the whole minutes
// that fit in every; an explicit stagger that does not fit is refused
// with what to set.
func TestScheduleDefaultStaggerFitsEveryRegion(t *testing.T) {
	all := "regions: [" + strings.Join(regions.All(), ", ") + "]\n"
	cfg := parseValid(t, all)
	n := len(cfg.Regions)
	if step := cfg.Schedule.StaggerStep(); step != time.Minute || time.Duration(n-1)*step >= cfg.Schedule.Every.Std() {
		t.Errorf("%d regions every %s: stagger %s, want 1m", n, cfg.Schedule.Every.Std(), step)
	}
	if cfg := parseValid(t, all+"schedule:\n  every: 30m\n"); cfg.Schedule.StaggerStep() != 16*time.Second {
		t.Errorf("%d regions every 30m: stagger %s, want 16s", n, cfg.Schedule.StaggerStep())
	}
	cfg, err := parse(strings.NewReader(all + "schedule:\n  stagger: 3m\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "set schedule.stagger to at most 1m7s ") {
		t.Errorf("explicit 3m stagger for %d regions: %v, want what to set", n, err)
	}
}

func TestSchedulePlanMatchesStandardCron(t *testing.T) {
	cfg := parseValid(t, `
regions: [us, gb, jp]
schedule:
  every: 2h
  stagger: 5m
  timezone: America/New_York
  regions:
    jp: "CRON_TZ=Asia/Tokyo 30 6 * * *"
`)
	plan, err := cfg.Schedule.Plan(cfg.Regions)
	if err != nil {
		t.Fatal(err)
	}
	std := map[string]string{
		"US": "CRON_TZ=America/New_York 0 */2 * * *",
		"GB": "CRON_TZ=America/New_York 5 */2 * * *",
		"JP": "CRON_TZ=Asia/Tokyo 30 6 * * *",
	}
	// Across the 2026-03-08 DST change in New York and beyond.
	from := time.Date(2026, 3, 7, 12, 1, 0, 0, time.UTC)
	for _, p := range plan {
		c, err := cron.ParseStandard(std[p.Region])
		if err != nil {
			t.Fatal(err)
		}
		at := from
		for range 40 {
			got, want := p.Schedule.Next(at), c.Next(at)
			if !got.Equal(want) {
				t.Fatalf("%s (%s): next after %s = %s, cron.ParseStandard(%q) says %s", p.Region, p.Spec, at, got, std[p.Region], want)
			}
			at = got
		}
	}
	if !plan[2].Explicit || plan[2].Offset != 0 || plan[1].Offset != 5*time.Minute {
		t.Errorf("plan = %+v", plan)
	}
}

func TestScheduleCronWithStagger(t *testing.T) {
	cfg := parseValid(t, "regions: [US, GB]\nschedule:\n  cron: \"CRON_TZ=UTC 0 6 * * *\"\n  stagger: 10m\n")
	plan, err := cfg.Schedule.Plan(cfg.Regions)
	if err != nil {
		t.Fatal(err)
	}
	from := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	if got := plan[1].Schedule.Next(from); !got.Equal(time.Date(2026, 5, 1, 6, 10, 0, 0, time.UTC)) {
		t.Errorf("GB next = %s, want 06:10 UTC", got)
	}
	if cfg.Schedule.Every != 0 {
		t.Errorf("every = %s although cron is set", cfg.Schedule.Every.Std())
	}
}

func TestScheduleValidation(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, field, reason string
	}{
		{"both", "schedule:\n  every: 1h\n  cron: \"0 * * * *\"\n", "schedule.every", "not both"},
		{"sub-second", "schedule:\n  every: 500ms\n", "schedule.every", "at least 1s"},
		{"bad cron", "schedule:\n  cron: \"61 * * * *\"\n", "schedule.cron", "61"},
		{"bad tz", "schedule:\n  timezone: Mars/Olympus\n", "schedule.timezone", "unknown time zone"},
		{"bad cron tz", "schedule:\n  cron: \"CRON_TZ=Mars/Olympus 0 * * * *\"\n", "schedule.cron", "Mars/Olympus"},
		{"wrap", "regions: [US, GB, JP]\nschedule:\n  every: 10m\n  stagger: 5m\n", "schedule.stagger", "collide"},
		{"negative stagger", "schedule:\n  stagger: -1m\n", "schedule.stagger", ">= 0"},
		{"concurrency", "schedule:\n  concurrency: 100\n", "schedule.concurrency", "1-64"},
		{"grace", "schedule:\n  grace: -1s\n", "schedule.grace", "> 0"},
		{"unconfigured region", "regions: [US]\nschedule:\n  regions:\n    GB: \"0 * * * *\"\n", "schedule.regions.GB", "not in regions"},
		{"bad region spec", "regions: [US]\nschedule:\n  regions:\n    us: \"every day\"\n", "schedule.regions.US", "want e.g."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := parse(strings.NewReader(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			err = cfg.Validate()
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Validate = %v, want a *ValidationError", err)
			}
			if ve.Field != tc.field || !strings.Contains(ve.Error(), tc.reason) {
				t.Errorf("error %q (field %s), want field %s and %q", ve, ve.Field, tc.field, tc.reason)
			}
		})
	}
	cfg, err := parse(strings.NewReader("schedule:\n  regions:\n    UK: \"0 * * * *\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	var re *regions.Error
	if err := cfg.Validate(); !errors.As(err, &re) || re.Suggestion != "GB" {
		t.Errorf("schedule.regions.UK: %v, want a regions.Error suggesting GB", err)
	}
	if _, err := parse(strings.NewReader("schedule:\n  evry: 1h\n")); err == nil || !strings.Contains(err.Error(), "evry") {
		t.Errorf("unknown schedule key: %v", err)
	}
}

func TestStaggeredNextRunsAreDistinctAndMatchCrontab(t *testing.T) {
	list := []string{"US", "GB", "JP"}
	from := time.Date(2026, 3, 10, 10, 59, 0, 0, time.UTC)
	// What `trendfetch crontab` prints for the same config, read by cron's
	// standard parser: the scheduler must fire at exactly these times.
	crontab := map[string]string{"US": "0 */2 * * *", "GB": "3 */2 * * *", "JP": "6 */2 * * *"}
	seen := map[time.Time]string{}
	step := Duration(3 * time.Minute)
	rs, err := Schedule{Every: Duration(2 * time.Hour), Stagger: &step, Timezone: "UTC"}.Plan(list)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range rs {
		s := o.Schedule
		std, err := cron.ParseStandard("CRON_TZ=UTC " + crontab[o.Region])
		if err != nil {
			t.Fatal(err)
		}
		at := from
		for range 30 {
			got, want := s.Next(at), std.Next(at)
			if !got.Equal(want) {
				t.Fatalf("%s: next after %s = %s, cron line %q says %s", o.Region, at, got, crontab[o.Region], want)
			}
			if prev, dup := seen[got]; dup {
				t.Fatalf("%s and %s both run at %s", prev, o.Region, got)
			}
			seen[got] = o.Region
			at = got
		}
	}
}

// TestPlanStaggers: the i-th region starts i × stagger after the shared
// tick, the same for the same list, distinct, decided by the order alone;
// a Stagger of 0 or below staggers nothing.
func TestPlanStaggers(t *testing.T) {
	list := []string{"US", "GB", "JP", "DE", "FR"}
	offsets := func(list []string, step time.Duration) []time.Duration {
		d := Duration(step)
		rs, err := Schedule{Every: Duration(time.Hour), Stagger: &d, Timezone: "UTC"}.Plan(list)
		if err != nil {
			t.Fatal(err)
		}
		var out []time.Duration
		for i, r := range rs {
			if r.Region != list[i] || r.Index != i {
				t.Errorf("region %d = %+v, want %s", i, r, list[i])
			}
			out = append(out, r.Offset)
		}
		return out
	}
	a, b := offsets(list, 3*time.Minute), offsets(append([]string(nil), list...), 3*time.Minute)
	seen := map[time.Duration]bool{}
	for i, o := range a {
		if o != b[i] || o != time.Duration(i)*3*time.Minute || seen[o] {
			t.Errorf("offset %d = %s (then %s), want %s, distinct", i, o, b[i], time.Duration(i)*3*time.Minute)
		}
		seen[o] = true
	}
	if c := offsets([]string{"GB", "US"}, time.Minute); c[0] != 0 || c[1] != time.Minute {
		t.Errorf("GB, US: offsets %v, want [0 1m]", c)
	}
	for _, step := range []time.Duration{0, -time.Minute} {
		for i, o := range offsets(list, step) {
			if o != 0 {
				t.Errorf("stagger %s: offset %d = %s", step, i, o)
			}
		}
	}
}
