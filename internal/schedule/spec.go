package schedule

import (
	"cmp"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

var specParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseSpec parses a cron spec: five fields ("7 */2 * * *"), six with seconds first, or a
// descriptor ("@every 90s"), optionally prefixed "CRON_TZ=Area/City " or "TZ=Area/City " (else read
// in tz, "" = local). Errors quote the spec.
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

// Every fires every Interval, Offset (modulo Interval) after each aligned tick. An Interval
// dividing 24h is aligned to midnight of Location (nil = local) in wall-clock time, like the
// crontab line "3 */2 * * *" for Every{2h, 3m} (a wall time in a DST gap is skipped, as cron does);
// others to the zero time.Time. The ticks never depend on when the process started.
type Every struct {
	Interval, Offset time.Duration
	Location         *time.Location
}

// Next returns the first tick strictly after t, or the zero time when Interval <= 0.
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

// Next returns the first shifted tick strictly after t, or the zero time when Schedule has none.
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

// Region is one region's place in the schedule (Plan).
type Region struct {
	Region   string
	Index    int           // position in the list, from 0
	Offset   time.Duration // Index × stagger; 0 for a spec of its own
	Spec     string        // "every 2h0m0s +3m0s", or the cron spec
	Explicit bool          // a spec of its own (schedule.regions)
	Schedule cron.Schedule
}

// PlanSettings is what Plan builds a plan from: the shared tick (every Every on the wall clock
// in Location, or the cron spec Cron when not ""), Timezone (the spec's zone, "" local), the
// stagger step between regions (>= 0) and the regions with a cron spec of their own.
type PlanSettings struct {
	Every    time.Duration
	Cron     string
	Timezone string
	Location *time.Location
	Stagger  time.Duration
	Own      map[string]string
}

// SpecError is Plan's error: the cron spec of Region ("" for the shared Cron) does not parse.
type SpecError struct {
	Region, Spec string
	Err          error
}

func (e *SpecError) Error() string { return fmt.Sprintf("cron spec %q: %v", e.Spec, e.Err) }

// Unwrap returns the parser's error.
func (e *SpecError) Unwrap() error { return e.Err }

// Plan returns each region's schedule in list order: the i-th starts i × Stagger after the
// shared tick (Every: wall-clock; Cron: Shift), a region of Own on its own spec. Errors: a
// *SpecError.
func Plan(list []string, s PlanSettings) ([]Region, error) {
	at := func(off time.Duration) cron.Schedule {
		return Every{Interval: s.Every, Offset: off, Location: s.Location}
	}
	desc := "every " + s.Every.String()
	if s.Cron != "" {
		shared, err := ParseSpec(s.Cron, s.Timezone)
		if err != nil {
			return nil, &SpecError{Spec: s.Cron, Err: err}
		}
		at = func(off time.Duration) cron.Schedule { return Shift{Schedule: shared, Offset: off} }
		desc = s.Cron
	}
	out := make([]Region, len(list))
	for i, code := range list {
		r := Region{Region: code, Index: i, Offset: time.Duration(i) * s.Stagger}
		if spec, ok := s.Own[code]; ok {
			sch, err := ParseSpec(spec, s.Timezone)
			if err != nil {
				return nil, &SpecError{Region: code, Spec: spec, Err: err}
			}
			r.Offset, r.Spec, r.Explicit, r.Schedule = 0, spec, true, sch
		} else if r.Schedule, r.Spec = at(r.Offset), desc; r.Offset > 0 {
			r.Spec += " +" + r.Offset.String()
		}
		out[i] = r
	}
	return out, nil
}

// CrontabFields returns the crontab time fields of the ticks of Every{every, offset}:
// CrontabFields(2h, 3m) = "3 */2 * * *", (15m, 5m) = "5-59/15 * * * *". every must divide an hour
// in minutes or a day in hours; offset is whole minutes in [0, every). Errors say which.
func CrontabFields(every, offset time.Duration) (string, error) {
	if err := calendarTicks(every, offset, "a crontab line"); err != nil {
		return "", err
	}
	min := int(offset % time.Hour / time.Minute)
	if every < time.Hour {
		return cronStep(min, int(every/time.Minute), 59) + " * * * *", nil
	}
	return fmt.Sprintf("%d %s * * *", min, cronStep(int(offset/time.Hour), int(every/time.Hour), 23)), nil
}

// cronStep is a crontab field firing every n from start up to last.
func cronStep(start, n, last int) string {
	switch {
	case n == 1:
		return "*"
	case n > last:
		return strconv.Itoa(start)
	case start == 0:
		return "*/" + strconv.Itoa(n)
	}
	return fmt.Sprintf("%d-%d/%d", start, last, n)
}

// calendarTicks returns an error naming form unless CrontabFields and
// OnCalendar can express every and offset.
func calendarTicks(every, offset time.Duration, form string) error {
	switch {
	case every <= 0 || every%time.Minute != 0:
		return fmt.Errorf("interval %s is not whole minutes: %s cannot express it", every, form)
	case offset < 0 || offset%time.Minute != 0:
		return fmt.Errorf("offset %s is not whole minutes: %s cannot express it", offset, form)
	case offset >= every:
		return fmt.Errorf("offset %s is not below the interval %s", offset, every)
	case !(every < time.Hour && time.Hour%every == 0) && !(every%time.Hour == 0 && (24*time.Hour)%every == 0):
		return fmt.Errorf("interval %s cannot be written as %s: use minutes dividing an hour (1m-30m), hours dividing a day (1h-12h) or 24h", every, form)
	}
	return nil
}

// OnCalendar returns the systemd calendar event (systemd.time(7)) of the
// ticks of CrontabFields(every, offset): (2h, 3m) = "*-*-* 00/2:03:00",
// (15m, 5m) = "*-*-* *:05/15:00". Errors are CrontabFields's.
func OnCalendar(every, offset time.Duration) (string, error) {
	if err := calendarTicks(every, offset, "a systemd OnCalendar= event"); err != nil {
		return "", err
	}
	min := int(offset % time.Hour / time.Minute)
	if every < time.Hour {
		return fmt.Sprintf("*-*-* *:%02d/%d:00", min, int(every/time.Minute)), nil
	}
	n, start := int(every/time.Hour), int(offset/time.Hour)
	switch n {
	case 1:
		return fmt.Sprintf("*-*-* *:%02d:00", min), nil
	case 24:
		return fmt.Sprintf("*-*-* %02d:%02d:00", start, min), nil
	}
	return fmt.Sprintf("*-*-* %02d/%d:%02d:00", start, n, min), nil
}

// Slots returns the slots of s that start in [from, to], oldest first: each
// from its tick to the next tick (the last's end may be after to; zero when
// s has no next tick). It stops after limit slots and then reports more.
func Slots(s cron.Schedule, from, to time.Time, limit int) (slots [][2]time.Time, more bool) {
	tick := s.Next(from.Add(-time.Nanosecond))
	for !tick.IsZero() && !tick.After(to) {
		if len(slots) == limit {
			return slots, true
		}
		next := s.Next(tick)
		slots = append(slots, [2]time.Time{tick, next})
		tick = next
	}
	return slots, false
}
