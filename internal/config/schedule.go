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

// Schedule defaults, filled by complete.
const (
	DefaultEvery   = 2 * time.Hour
	DefaultStagger = 3 * time.Minute
	DefaultLogDir  = "/var/log/trendfetch"
	maxConcurrency = 64
)

// Schedule is the `schedule` section of `schedule` and `crontab` (how
// regions share it: schedule.Layout). Stagger nil is unset; 0s is none.
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

// Location returns Timezone's location, time.Local when Timezone is ""
// (Validate refuses an unknown zone).
func (s Schedule) Location() *time.Location {
	if loc, err := time.LoadLocation(s.Timezone); err == nil && s.Timezone != "" {
		return loc
	}
	return time.Local
}

// Plan returns each region's schedule, in list order; errors name the key.
func (s Schedule) Plan(list []string) ([]schedule.Region, error) {
	l := schedule.Layout{Every: s.Every.Std(), Cron: s.Cron, Stagger: s.StaggerStep(), Timezone: s.Timezone, Own: s.Regions}
	l.Every = cmp.Or(l.Every, DefaultEvery)
	out, err := l.Regions(list)
	var se *schedule.SpecError
	if errors.As(err, &se) {
		value := se.Value
		if se.Setting != "timezone" {
			value = fmt.Sprintf("%q", value)
		}
		return nil, invalid("schedule."+se.Setting, value, "%s", se.Reason)
	}
	return out, err
}

// complete fills the defaults and normalizes schedule.regions' codes.
func (s *Schedule) complete() {
	if s.Cron == "" && s.Every == 0 {
		s.Every = Duration(DefaultEvery)
	}
	if s.Stagger == nil {
		d := Duration(DefaultStagger)
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

// validate checks the schedule against the (normalized) region list.
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
	if s.Every > 0 && len(list) > 1 {
		if last := time.Duration(len(list)-1) * s.Stagger.Std(); last >= s.Every.Std() {
			return invalid("schedule.stagger", time.Duration(*s.Stagger),
				"%d regions × %s reach the next tick (every %s): offsets would wrap and regions collide; lower the stagger or raise every",
				len(list), s.Stagger.Std(), s.Every.Std())
		}
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
