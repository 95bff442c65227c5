package schedule

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
)

func mustLoc(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestEveryAlignedToMidnight(t *testing.T) {
	for _, tc := range []struct {
		every   time.Duration
		loc     string
		from    string
		want    string
		whatFor string
	}{
		{2 * time.Hour, "UTC", "2026-03-10T10:59:00Z", "2026-03-10T12:00:00Z", "even hours"},
		{2 * time.Hour, "UTC", "2026-03-10T12:00:00Z", "2026-03-10T14:00:00Z", "strictly after"},
		{2 * time.Hour, "UTC", "2026-03-10T23:30:00Z", "2026-03-11T00:00:00Z", "next day"},
		{24 * time.Hour, "UTC", "2026-12-31T08:00:00Z", "2027-01-01T00:00:00Z", "next year"},
		{time.Second, "UTC", "2026-03-10T10:59:59.2Z", "2026-03-10T11:00:00Z", "seconds"},
		{15 * time.Minute, "UTC", "2026-03-10T10:07:00Z", "2026-03-10T10:15:00Z", "quarter hours"},
		// 2h in Tokyo (UTC+9): local even hours are odd hours in UTC.
		{2 * time.Hour, "Asia/Tokyo", "2026-03-10T10:59:00Z", "2026-03-10T11:00:00Z", "local even hours"},
		// Los Angeles springs forward at 02:00 on 2026-03-08: 01:00 PST is
		// followed by 03:00 PDT (02:00 does not exist).
		{time.Hour, "America/Los_Angeles", "2026-03-08T09:30:00Z", "2026-03-08T10:00:00Z", "02:00 does not exist that day: the tick is 03:00 PDT = 10:00Z"},
		// 7m does not divide 24h: aligned to the zero time, not to midnight.
		{7 * time.Minute, "UTC", "2026-03-10T10:00:00Z", utc("2026-03-10T10:00:00Z").Truncate(7 * time.Minute).Add(7 * time.Minute).Format(time.RFC3339), "non-divisor"},
	} {
		got := Every{Interval: tc.every, Location: mustLoc(t, tc.loc)}.Next(utc(tc.from))
		if !got.Equal(utc(tc.want)) {
			t.Errorf("Every{%s, %s}.Next(%s) = %s, want %s (%s)", tc.every, tc.loc, tc.from, got.UTC().Format(time.RFC3339Nano), tc.want, tc.whatFor)
		}
	}
	if !(Every{}).Next(time.Now()).IsZero() {
		t.Error("Every{0} has a next tick")
	}
}

func TestParseSpecTimeZones(t *testing.T) {
	from := utc("2026-07-01T00:00:00Z")
	for _, tc := range []struct {
		spec, tz, want string
	}{
		// 06:00 in New York in July is 10:00 UTC (EDT, UTC-4).
		{"CRON_TZ=America/New_York 0 6 * * *", "", "2026-07-01T10:00:00Z"},
		{"TZ=America/New_York 0 6 * * *", "", "2026-07-01T10:00:00Z"},
		// The config's time zone applies when the spec has none...
		{"0 6 * * *", "Asia/Tokyo", "2026-07-01T21:00:00Z"},
		// ...and the spec's own prefix wins over it.
		{"CRON_TZ=UTC 0 6 * * *", "Asia/Tokyo", "2026-07-01T06:00:00Z"},
		// Six fields: seconds first.
		{"*/10 * * * * *", "UTC", "2026-07-01T00:00:10Z"},
		{"@every 90s", "", "2026-07-01T00:01:30Z"},
		{"@hourly", "UTC", "2026-07-01T01:00:00Z"},
	} {
		s, err := ParseSpec(tc.spec, tc.tz)
		if err != nil {
			t.Errorf("ParseSpec(%q, %q): %v", tc.spec, tc.tz, err)
			continue
		}
		if got := s.Next(from); !got.Equal(utc(tc.want)) {
			t.Errorf("ParseSpec(%q, %q).Next(%s) = %s, want %s", tc.spec, tc.tz, from, got.UTC(), tc.want)
		}
	}
	// The standard parser agrees on a CRON_TZ spec (what the crontab and
	// the scheduler both read).
	std, err := cron.ParseStandard("CRON_TZ=Europe/London 30 6 * * 1")
	if err != nil {
		t.Fatal(err)
	}
	ours, err := ParseSpec("CRON_TZ=Europe/London 30 6 * * 1", "")
	if err != nil {
		t.Fatal(err)
	}
	if a, b := std.Next(from), ours.Next(from); !a.Equal(b) || !a.Equal(utc("2026-07-06T05:30:00Z")) {
		t.Errorf("ParseStandard %s, ParseSpec %s, want 2026-07-06T05:30:00Z (Monday 06:30 BST)", a, b)
	}
	for _, bad := range []string{"", "61 * * * *", "CRON_TZ=Nowhere/Else 0 * * * *", "every 2h"} {
		if _, err := ParseSpec(bad, ""); err == nil {
			t.Errorf("ParseSpec(%q) accepted", bad)
		} else if bad != "" && !strings.Contains(err.Error(), bad) {
			t.Errorf("ParseSpec(%q) error %q does not quote the spec", bad, err)
		}
	}
}

func TestShiftAddsTheOffset(t *testing.T) {
	s := Shift{Schedule: Every{Interval: time.Hour, Location: time.UTC}, Offset: 10 * time.Minute}
	for from, want := range map[string]string{
		"2026-03-10T10:00:00Z": "2026-03-10T10:10:00Z",
		"2026-03-10T10:10:00Z": "2026-03-10T11:10:00Z",
		"2026-03-10T10:09:59Z": "2026-03-10T10:10:00Z",
	} {
		if got := s.Next(utc(from)); !got.Equal(utc(want)) {
			t.Errorf("Next(%s) = %s, want %s", from, got, want)
		}
	}
}

// TestSlot: a slot runs from the latest tick at or before t (a tick itself
// opens its slot) to the next, for staggered Every schedules, shifted cron
// specs and sparse specs (29 February), and is empty before a spec's first
// tick.
func TestSlot(t *testing.T) {
	ny := mustLoc(t, "America/New_York")
	leap, err := ParseSpec("0 6 29 2 *", "UTC")
	if err != nil {
		t.Fatal(err)
	}
	halfPast, err := ParseSpec("30 * * * *", "UTC")
	if err != nil {
		t.Fatal(err)
	}
	twice, err := ParseSpec("0,1 0 * * *", "UTC") // uneven: 00:00 and 00:01
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		s        cron.Schedule
		t        string
		from, to string
	}{
		{"every 2h +3m, mid-slot", Every{Interval: 2 * time.Hour, Offset: 3 * time.Minute, Location: time.UTC}, "2026-03-10T11:00:00Z", "2026-03-10T10:03:00Z", "2026-03-10T12:03:00Z"},
		{"every 2h +3m, on a tick", Every{Interval: 2 * time.Hour, Offset: 3 * time.Minute, Location: time.UTC}, "2026-03-10T12:03:00Z", "2026-03-10T12:03:00Z", "2026-03-10T14:03:00Z"},
		{"every 2h +3m, just before a tick", Every{Interval: 2 * time.Hour, Offset: 3 * time.Minute, Location: time.UTC}, "2026-03-10T12:02:59.999Z", "2026-03-10T10:03:00Z", "2026-03-10T12:03:00Z"},
		{"every 6h New York, after midnight", Every{Interval: 6 * time.Hour, Location: ny}, "2026-01-10T05:30:00Z", "2026-01-10T05:00:00Z", "2026-01-10T11:00:00Z"},
		{"every 5s", Every{Interval: 5 * time.Second, Location: time.UTC}, "2026-03-10T10:00:07.5Z", "2026-03-10T10:00:05Z", "2026-03-10T10:00:10Z"},
		{"cron shifted 6m", Shift{Schedule: halfPast, Offset: 6 * time.Minute}, "2026-03-10T10:20:00Z", "2026-03-10T09:36:00Z", "2026-03-10T10:36:00Z"},
		{"uneven ticks", twice, "2026-03-10T12:00:00Z", "2026-03-10T00:01:00Z", "2026-03-11T00:00:00Z"},
		{"29 February", leap, "2026-03-10T10:00:00Z", "2024-02-29T06:00:00Z", "2028-02-29T06:00:00Z"},
	} {
		from, to := Slot(tc.s, utc(tc.t))
		if !from.Equal(utc(tc.from)) || !to.Equal(utc(tc.to)) {
			t.Errorf("%s: Slot(%s) = [%s, %s), want [%s, %s)", tc.name, tc.t, from, to, tc.from, tc.to)
		}
	}
	if from, _ := Slot(Every{}, utc("2026-03-10T10:00:00Z")); !from.IsZero() {
		t.Errorf("a schedule without ticks has a slot from %s", from)
	}
}

// TestPlan: regions in list order start one stagger step apart after the shared tick (every:
// wall clock; cron: shifted), a region of Own keeps its own spec and no offset, and a spec that
// does not parse is a *SpecError naming its region ("" for the shared one).
func TestPlan(t *testing.T) {
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	plan, err := Plan([]string{"US", "GB", "JP"}, PlanSettings{Every: 2 * time.Hour, Location: time.UTC,
		Timezone: "UTC", Stagger: 3 * time.Minute, Own: map[string]string{"GB": "30 6 * * *"}})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct {
		spec   string
		offset time.Duration
		next   time.Time
	}{
		{"every 2h0m0s", 0, at.Add(2 * time.Hour)},
		{"30 6 * * *", 0, at.Add(6*time.Hour + 30*time.Minute)},
		{"every 2h0m0s +6m0s", 6 * time.Minute, at.Add(6 * time.Minute)},
	} {
		r := plan[i]
		if r.Index != i || r.Spec != want.spec || r.Offset != want.offset || !r.Schedule.Next(at).Equal(want.next) {
			t.Errorf("plan[%d] = %+v, next %s; want spec %q, offset %s, next %s", i, r, r.Schedule.Next(at), want.spec, want.offset, want.next)
		}
	}
	shifted, err := Plan([]string{"US", "GB"}, PlanSettings{Cron: "0 */6 * * *", Timezone: "UTC", Stagger: time.Minute})
	if err != nil || shifted[1].Spec != "0 */6 * * * +1m0s" || !shifted[1].Schedule.Next(at).Equal(at.Add(time.Minute)) {
		t.Errorf("cron plan: %+v, %v; want GB one minute after the shared tick", shifted, err)
	}
	for _, s := range []PlanSettings{{Cron: "61 * * * *"}, {Every: time.Hour, Location: time.UTC, Own: map[string]string{"GB": "nope"}}} {
		_, err := Plan([]string{"US", "GB"}, s)
		se, ok := errors.AsType[*SpecError](err)
		if want := map[bool]string{true: "", false: "GB"}[s.Cron != ""]; !ok || se.Region != want {
			t.Errorf("Plan(%+v) = %v, want a *SpecError of region %q", s, err, want)
		}
	}
}
