package schedule

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Layout is how regions share one schedule (Every, or the cron spec Cron)
// shifted by Stagger per region in list order, except the regions Own gives
// a spec of their own. Timezone: Every's and the specs' ("" = local).
type Layout struct {
	Every    time.Duration
	Cron     string
	Stagger  time.Duration
	Timezone string
	Own      map[string]string // region code -> cron spec
}

// Region is one region's place in a Layout.
type Region struct {
	Region   string
	Index    int           // position in the list, from 0
	Offset   time.Duration // Index × Stagger; 0 for a spec of its own
	Spec     string        // "every 2h0m0s +3m0s", or the cron spec
	Explicit bool          // a spec of its own (Layout.Own)
	Schedule cron.Schedule
}

// SpecError is a Layout setting ("timezone", "cron", "regions.<CODE>")
// that cannot be scheduled, with its value as written.
type SpecError struct {
	Setting, Value, Reason string
}

func (e *SpecError) Error() string { return fmt.Sprintf("%s %q: %s", e.Setting, e.Value, e.Reason) }

// Regions returns each region's schedule in list order: the i-th starts
// i × Stagger after the shared tick (Every in wall-clock time, a cron spec
// by Shift). Errors are *SpecError.
func (l Layout) Regions(list []string) ([]Region, error) {
	loc := time.Local
	if l.Timezone != "" {
		var err error
		if loc, err = time.LoadLocation(l.Timezone); err != nil {
			return nil, &SpecError{"timezone", l.Timezone, "unknown time zone (want an IANA name such as Europe/London)"}
		}
	}
	at := func(off time.Duration) cron.Schedule { return Every{Interval: l.Every, Offset: off, Location: loc} }
	desc := "every " + l.Every.String()
	if l.Cron != "" {
		shared, err := ParseSpec(l.Cron, l.Timezone)
		if err != nil {
			return nil, &SpecError{"cron", l.Cron, specReason(err)}
		}
		at = func(off time.Duration) cron.Schedule { return Shift{Schedule: shared, Offset: off} }
		desc = l.Cron
	}
	out := make([]Region, 0, len(list))
	for i, code := range list {
		r := Region{Region: code, Index: i}
		if spec, ok := l.Own[code]; ok {
			sch, err := ParseSpec(spec, l.Timezone)
			if err != nil {
				return nil, &SpecError{"regions." + code, spec, specReason(err)}
			}
			r.Spec, r.Explicit, r.Schedule = spec, true, sch
		} else {
			off := time.Duration(i) * max(l.Stagger, 0)
			r.Offset, r.Schedule, r.Spec = off, at(off), desc
			if off > 0 {
				r.Spec += " +" + off.String()
			}
		}
		out = append(out, r)
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
