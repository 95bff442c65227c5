package schedule

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// specParser accepts the standard five fields (minute first), an optional
// leading seconds field (six fields), descriptors (@hourly, @every 90s) and
// a CRON_TZ= or TZ= prefix.
var specParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseSpec parses a cron spec: five fields ("7 */2 * * *"), six fields
// with seconds first ("*/5 * * * * *"), a descriptor ("@hourly",
// "@every 90s"), each optionally prefixed "CRON_TZ=Area/City " or
// "TZ=Area/City ". A spec without such a prefix is read in the time zone
// tz (an IANA name) when tz is not "", else in the local zone (the TZ
// environment variable). Errors quote the spec.
func ParseSpec(spec, tz string) (cron.Schedule, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, fmt.Errorf("empty cron spec")
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

// Every fires every Interval, Offset after each aligned tick. When Interval
// divides 24 h (1s, 15m, 2h, 24h, ...) the ticks are aligned to midnight
// of Location in wall-clock time: Every{2h, Offset 3m} fires at 00:03,
// 02:03, ... local time, exactly like the crontab line "3 */2 * * *" (a
// wall time that does not exist in a daylight-saving gap is skipped, as
// cron does). Other intervals are aligned to the zero time.Time,
// independently of Location. Either way the ticks depend only on the
// configuration, never on when the process started, so `trendfetch
// regions` shows the scheduler's real next run.
type Every struct {
	// Interval is the period; must be > 0.
	Interval time.Duration
	// Offset delays each tick; taken modulo Interval.
	Offset time.Duration
	// Location is the clock the ticks are aligned to; nil means time.Local.
	Location *time.Location
}

// Next returns the first tick strictly after t, or the zero time when
// Interval <= 0.
func (e Every) Next(t time.Time) time.Time {
	iv := e.Interval
	if iv <= 0 {
		return time.Time{}
	}
	off := e.Offset % iv
	if off < 0 {
		off += iv
	}
	if (24*time.Hour)%iv != 0 {
		return t.Add(-off).Truncate(iv).Add(iv + off)
	}
	loc := e.Location
	if loc == nil {
		loc = time.Local
	}
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
		// A wall time in a spring-forward gap does not exist: time.Date
		// moves it by the gap, and cron skips such a tick; so do we.
		exists := next.Hour() == int(h) && next.Minute() == int(rest/time.Minute)
		if exists && next.After(t) {
			return next
		}
		slot += iv
	}
	return time.Time{}
}

// Shift fires Offset after each tick of Schedule: the staggered schedule of
// a region whose shared schedule is a cron expression. Next(t) is
// Schedule.Next(t-Offset)+Offset, in absolute time (across a DST change the
// wall-clock offset is kept in elapsed time, not in clock readings). For
// Every, set Every.Offset instead: it staggers in wall-clock time like cron.
type Shift struct {
	// Schedule is the shared schedule.
	Schedule cron.Schedule
	// Offset is how long after each shared tick this entry fires.
	Offset time.Duration
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

// slotLookBack bounds how far back Slot looks for a tick: past any cron
// spec's longest gap (29 February comes every 4 years, at worst 8).
const slotLookBack = 9 * 366 * 24 * time.Hour

// Slot returns the slot of s that holds t: from its latest tick at or
// before t (from is the zero time when s has none within 9 years) to its
// first tick after t (to is zero when there is none). Two runs of one
// region in one slot belong to the same tick (docs/design.md §10a).
func Slot(s cron.Schedule, t time.Time) (from, to time.Time) {
	to = s.Next(t)
	// Widen the window back from t until it holds a tick, then walk to the
	// latest tick at or before t.
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
