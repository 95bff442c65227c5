package schedule

import (
	"cmp"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

var specParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseSpec parses a cron spec: five fields ("7 */2 * * *"), six with
// seconds first, or a descriptor ("@every 90s"), optionally prefixed
// "CRON_TZ=Area/City " or "TZ=Area/City " (else read in tz, "" = local).
// Errors quote the spec.
func ParseSpec(spec, tz string) (cron.Schedule, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, errors.New("empty cron spec")
	}
	if tz != "" && !HasTZ(spec) {
		spec = "CRON_TZ=" + tz + " " + spec
	}
	s, err := specParser.Parse(spec)
	if err != nil {
		return nil, fmt.Errorf("bad cron spec %q: %w", spec, err)
	}
	return s, nil
}

// HasTZ reports whether spec starts with a CRON_TZ= or TZ= prefix.
func HasTZ(spec string) bool {
	spec = strings.TrimSpace(spec)
	return strings.HasPrefix(spec, "CRON_TZ=") || strings.HasPrefix(spec, "TZ=")
}

// Every fires every Interval, Offset (modulo Interval) after each aligned
// tick. An Interval dividing 24h is aligned to midnight of Location (nil =
// local) in wall-clock time, like the crontab line "3 */2 * * *" for
// Every{2h, 3m} (a wall time in a DST gap is skipped, as cron does); others
// to the zero time.Time. The ticks never depend on when the process started.
type Every struct {
	Interval, Offset time.Duration
	Location         *time.Location
}

// Next returns the first tick strictly after t, or the zero time when
// Interval <= 0.
func (e Every) Next(t time.Time) time.Time {
	iv := e.Interval
	if iv <= 0 {
		return time.Time{}
	}
	off := (e.Offset%iv + iv) % iv
	if (24*time.Hour)%iv != 0 {
		return t.Add(-off).Truncate(iv).Add(iv + off)
	}
	loc := cmp.Or(e.Location, time.Local)
	t = t.In(loc)
	y, m, d := t.Date()
	wall := time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute +
		time.Duration(t.Second())*time.Second + time.Duration(t.Nanosecond())
	slot := off
	if wall >= off {
		slot = off + ((wall-off)/iv+1)*iv
	}
	// At most two days of slots: enough to leave any DST anomaly behind.
	for range 2*int64(24*time.Hour/iv) + 2 {
		if slot >= 24*time.Hour {
			d++
			slot -= 24 * time.Hour
		}
		h, rest := slot/time.Hour, slot%time.Hour
		next := time.Date(y, m, d, int(h), int(rest/time.Minute), int(rest%time.Minute/time.Second), int(rest%time.Second), loc)
		// time.Date moves a wall time in a DST gap; cron skips it, so do we.
		exists := next.Hour() == int(h) && next.Minute() == int(rest/time.Minute)
		if exists && next.After(t) {
			return next
		}
		slot += iv
	}
	return time.Time{}
}

// Shift fires Offset after each tick of Schedule (a cron spec's staggered
// region), in elapsed time; Every staggers by its own Offset instead.
type Shift struct {
	Schedule cron.Schedule
	Offset   time.Duration
}

// Next returns the first shifted tick strictly after t, or the zero time
// when Schedule has none.
func (s Shift) Next(t time.Time) time.Time {
	n := s.Schedule.Next(t.Add(-s.Offset))
	if n.IsZero() {
		return n
	}
	return n.Add(s.Offset)
}

// slotLookBack is past any cron spec's longest gap (29 February: 8 years).
const slotLookBack = 9 * 366 * 24 * time.Hour

// Slot returns the slot of s that holds t: from its latest tick at or
// before t (zero when none within 9 years) to its first tick after t (zero:
// none). Runs of a region in one slot share a tick (docs/design.md §10a).
func Slot(s cron.Schedule, t time.Time) (from, to time.Time) {
	to = s.Next(t)
	// Widen the window back until it holds a tick, then walk to the latest.
	for d := time.Second; d <= slotLookBack; d *= 2 {
		tick := s.Next(t.Add(-d))
		if tick.IsZero() || tick.After(t) {
			continue
		}
		for {
			next := s.Next(tick)
			if next.IsZero() || next.After(t) {
				return tick, to
			}
			tick = next
		}
	}
	return time.Time{}, to
}

// Region is one region's place in the schedule (config.Schedule.Plan).
type Region struct {
	Region   string
	Index    int           // position in the list, from 0
	Offset   time.Duration // Index × stagger; 0 for a spec of its own
	Spec     string        // "every 2h0m0s +3m0s", or the cron spec
	Explicit bool          // a spec of its own (schedule.regions)
	Schedule cron.Schedule
}
