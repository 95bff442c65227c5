package config

import (
	"cmp"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/trendfetch/trendfetch/internal/regions"
	"github.com/trendfetch/trendfetch/internal/schedule"
)

// Schedule defaults, applied by Validate.
const (
	DefaultEvery       = 2 * time.Hour
	DefaultStagger     = 3 * time.Minute
	DefaultConcurrency = 1
	DefaultGrace       = schedule.DefaultGrace
	DefaultLogDir      = "/var/log/trendfetch"
	maxConcurrency     = 64
)

// Schedule is the `schedule` section, read by `trendfetch schedule` and
// `trendfetch crontab`: region i of `regions` runs i × Stagger after each
// tick of the shared schedule (Every, aligned to midnight in Timezone when
// it divides 24h; or the cron spec Cron), unless Regions gives it a cron
// spec of its own. Concurrency regions run at once; on SIGTERM running jobs
// get Grace to finish; crontab's lines append to LogDir/REGION.log.
// Complete fills the defaults; Stagger nil is unset (0s is no stagger).
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

// RegionPlan is one region's place in the schedule.
type RegionPlan struct {
	// Region is the region code.
	Region string
	// Index is the region's position in `regions`, from 0.
	Index int
	// Offset is the stagger offset (Index × Stagger); 0 for an explicit spec.
	Offset time.Duration
	// Spec describes the schedule: "every 2h0m0s +3m0s", or the cron spec.
	Spec string
	// Explicit reports a per-region spec from schedule.regions.
	Explicit bool
	// Schedule computes the region's run times.
	Schedule cron.Schedule
}

// StaggerStep returns the stagger step (the default 3m when unset).
func (s Schedule) StaggerStep() time.Duration {
	if s.Stagger == nil {
		return DefaultStagger
	}
	return s.Stagger.Std()
}

// Location returns Timezone's location, time.Local when Timezone is "".
func (s Schedule) Location() (*time.Location, error) {
	if s.Timezone == "" {
		return time.Local, nil
	}
	loc, err := time.LoadLocation(s.Timezone)
	if err != nil {
		return nil, invalid("schedule.timezone", s.Timezone, "unknown time zone (want an IANA name such as Europe/London)")
	}
	return loc, nil
}

// Plan returns each region's schedule, in list order. Errors are
// *ValidationError naming the schedule field.
func (s Schedule) Plan(list []string) ([]RegionPlan, error) {
	loc, err := s.Location()
	if err != nil {
		return nil, err
	}
	// at returns the shared schedule shifted by offset: Every staggers in
	// wall-clock time (like the crontab lines), a cron spec by Shift.
	var (
		at   func(offset time.Duration) cron.Schedule
		desc string
	)
	switch {
	case s.Cron != "":
		shared, err := schedule.ParseSpec(s.Cron, s.Timezone)
		if err != nil {
			return nil, invalid("schedule.cron", fmt.Sprintf("%q", s.Cron), "%s", specReason(err))
		}
		at = func(off time.Duration) cron.Schedule { return schedule.Shift{Schedule: shared, Offset: off} }
		desc = s.Cron
	default:
		every := s.Every.Std()
		if every == 0 {
			every = DefaultEvery
		}
		at = func(off time.Duration) cron.Schedule {
			return schedule.Every{Interval: every, Offset: off, Location: loc}
		}
		desc = "every " + every.String()
	}
	out := make([]RegionPlan, 0, len(list))
	for _, o := range regions.Stagger(list, s.StaggerStep()) {
		p := RegionPlan{Region: o.Region, Index: o.Index}
		if spec, ok := s.Regions[o.Region]; ok {
			sch, err := schedule.ParseSpec(spec, s.Timezone)
			if err != nil {
				return nil, invalid("schedule.regions."+o.Region, fmt.Sprintf("%q", spec), "%s", specReason(err))
			}
			p.Spec, p.Explicit, p.Schedule = spec, true, sch
		} else {
			p.Offset, p.Schedule, p.Spec = o.Offset, at(o.Offset), desc
			if o.Offset > 0 {
				p.Spec += " +" + o.Offset.String()
			}
		}
		out = append(out, p)
	}
	return out, nil
}

func specReason(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		msg = msg[i+2:]
	}
	return msg + ` (want e.g. "7 */2 * * *", "CRON_TZ=Europe/London 30 6 * * *" or "@every 2h")`
}

// complete fills the schedule's defaults (every, stagger, concurrency,
// grace, log dir) and normalizes the region codes of schedule.regions when
// valid; part of Config.Complete.
func (s *Schedule) complete() {
	if s.Cron == "" && s.Every == 0 {
		s.Every = Duration(DefaultEvery)
	}
	if s.Stagger == nil {
		d := Duration(DefaultStagger)
		s.Stagger = &d
	}
	s.Concurrency = cmp.Or(s.Concurrency, DefaultConcurrency)
	s.Grace = cmp.Or(s.Grace, Duration(DefaultGrace))
	s.LogDir = cmp.Or(s.LogDir, DefaultLogDir)
	if len(s.Regions) == 0 {
		return
	}
	norm := make(map[string]string, len(s.Regions))
	for k, v := range s.Regions {
		code, err := regions.Parse(k)
		if err != nil {
			return // Validate reports it
		}
		if _, dup := norm[code]; dup {
			return // Validate reports it
		}
		norm[code] = v
	}
	s.Regions = norm
}

// validate checks the schedule (completed) against the (already
// normalized) region list. Errors are *ValidationError or *regions.Error.
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
	if len(s.Regions) > 0 {
		configured := map[string]bool{}
		for _, r := range list {
			configured[r] = true
		}
		seen := make(map[string]bool, len(s.Regions))
		keys := make([]string, 0, len(s.Regions))
		for k := range s.Regions {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			code, err := regions.Parse(k)
			if err != nil {
				return fmt.Errorf("config: schedule.regions: %w", err)
			}
			if !configured[code] {
				return invalid("schedule.regions."+code, fmt.Sprintf("%q", s.Regions[k]), "region %s is not in regions (%s)", code, strings.Join(list, ", "))
			}
			if seen[code] {
				return invalid("schedule.regions."+code, fmt.Sprintf("%q", s.Regions[k]), "given twice")
			}
			seen[code] = true
		}
	}
	_, err := s.Plan(list)
	return err
}
