package config

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/trendfetch/trendfetch/internal/regions"
	"github.com/trendfetch/trendfetch/internal/schedule"
)

const (
	DefaultEvery   = 2 * time.Hour
	DefaultStagger = 3 * time.Minute
	DefaultLogDir  = "/var/log/trendfetch"
	maxConcurrency = 64
)

// Schedule is the `schedule` section (how regions share it: Plan); Stagger nil is unset, 0s none.
type Schedule struct {
	Every       Duration          `yaml:"every"`
	Cron        string            `yaml:"cron"`
	Stagger     *Duration         `yaml:"stagger"`
	Timezone    string            `yaml:"timezone"` // IANA zone; "" = local ($TZ)
	Regions     map[string]string `yaml:"regions"`  // region code -> cron spec
	Concurrency int               `yaml:"concurrency"`
	Grace       Duration          `yaml:"grace"`
	LogDir      string            `yaml:"log_dir"`
}

// StaggerStep returns the stagger step (the default 3m when unset).
func (s Schedule) StaggerStep() time.Duration {
	if s.Stagger == nil {
		return DefaultStagger
	}
	return s.Stagger.Std()
}

// Location returns Timezone's location, time.Local for "" (Validate refuses an unknown zone).
func (s Schedule) Location() *time.Location {
	if loc, err := time.LoadLocation(s.Timezone); err == nil && s.Timezone != "" {
		return loc
	}
	return time.Local
}

// Plan returns each region's schedule in list order: the i-th starts i × stagger after the shared
// tick (every: wall-clock; cron: schedule.Shift), a region of schedule.regions on its own spec.
// Errors name the key.
func (s Schedule) Plan(list []string) ([]schedule.Region, error) {
	if _, err := time.LoadLocation(s.Timezone); err != nil {
		return nil, invalid("schedule.timezone", s.Timezone, "unknown time zone (want an IANA name such as Europe/London)")
	}
	plan, err := schedule.Plan(list, schedule.PlanSettings{Every: cmp.Or(s.Every.Std(), DefaultEvery), Cron: s.Cron,
		Timezone: s.Timezone, Location: s.Location(), Stagger: max(s.StaggerStep(), 0), Own: s.Regions})
	if se, ok := errors.AsType[*schedule.SpecError](err); ok {
		key := "schedule.cron"
		if se.Region != "" {
			key = "schedule.regions." + se.Region
		}
		return nil, invalid(key, fmt.Sprintf("%q", se.Spec), "%s", specReason(se.Err))
	}
	return plan, err
}

// specReason is a cron parser's error without the spec it quotes.
func specReason(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		msg = msg[i+2:]
	}
	return msg + ` (want e.g. "7 */2 * * *", "CRON_TZ=Europe/London 30 6 * * *" or "@every 2h")`
}

// complete fills the defaults for n regions and normalizes schedule.regions' codes.
func (s *Schedule) complete(n int) {
	if s.Cron == "" && s.Every == 0 {
		s.Every = Duration(DefaultEvery)
	}
	if s.Stagger == nil {
		d := Duration(fitStagger(s.Every.Std(), n))
		s.Stagger = &d
	}
	s.Concurrency = cmp.Or(s.Concurrency, 1)
	s.Grace = cmp.Or(s.Grace, Duration(schedule.DefaultGrace))
	s.LogDir = cmp.Or(s.LogDir, DefaultLogDir)
	if len(s.Regions) == 0 {
		return
	}
	norm := make(map[string]string, len(s.Regions))
	for k, v := range s.Regions {
		code, err := regions.Parse(k)
		if _, dup := norm[code]; err != nil || dup {
			return // Validate reports it
		}
		norm[code] = v
	}
	s.Regions = norm
}

// fitStagger is the default stagger for n regions every every (0: a cron spec): DefaultStagger, or
// when n of it would reach the next tick the whole minutes (seconds below a minute) that fit, so
// every supported region runs on default settings (106 every 2h: 1m).
func fitStagger(every time.Duration, n int) time.Duration {
	if every <= 0 || n < 2 || time.Duration(n-1)*DefaultStagger < every {
		return DefaultStagger
	}
	step := every / time.Duration(n)
	if step >= time.Minute {
		return step.Truncate(time.Minute)
	}
	return step.Truncate(time.Second)
}

func (s *Schedule) validate(list []string) error {
	if s.Every != 0 && s.Cron != "" {
		return invalid("schedule.every", time.Duration(s.Every), "set either schedule.every or schedule.cron, not both")
	}
	if s.Every < 0 || (s.Every > 0 && s.Every.Std() < time.Second) {
		return invalid("schedule.every", time.Duration(s.Every), "must be at least 1s")
	}
	if s.Stagger == nil || *s.Stagger < 0 {
		return invalid("schedule.stagger", s.Stagger, "must be >= 0")
	}
	if last := time.Duration(len(list)-1) * s.Stagger.Std(); s.Every > 0 && last >= s.Every.Std() {
		return invalid("schedule.stagger", time.Duration(*s.Stagger),
			"%d regions × %s reach the next tick (every %s): offsets would wrap and regions collide; set schedule.stagger to at most %s (or unset it) or raise every",
			len(list), s.Stagger.Std(), s.Every.Std(), (s.Every.Std() / time.Duration(len(list))).Truncate(time.Second))
	}
	if s.Concurrency < 1 || s.Concurrency > maxConcurrency {
		return invalid("schedule.concurrency", s.Concurrency, "must be 1-%d", maxConcurrency)
	}
	if s.Grace <= 0 {
		return invalid("schedule.grace", time.Duration(s.Grace), "must be > 0")
	}
	seen := map[string]bool{}
	for _, k := range slices.Sorted(maps.Keys(s.Regions)) {
		code, err := regions.Parse(k)
		if err != nil {
			return fmt.Errorf("config: schedule.regions: %w", err)
		}
		switch spec := fmt.Sprintf("%q", s.Regions[k]); {
		case !slices.Contains(list, code):
			return invalid("schedule.regions."+code, spec, "region %s is not in regions (%s)", code, strings.Join(list, ", "))
		case seen[code]:
			return invalid("schedule.regions."+code, spec, "given twice")
		}
		seen[code] = true
	}
	_, err := s.Plan(list)
	return err
}
