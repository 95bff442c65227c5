package engine

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/trendfetch/trendfetch/internal/schedule"
	"github.com/trendfetch/trendfetch/internal/store"
)

// MaxCoverageSlots bounds the slots of one region that Coverage lists.
const MaxCoverageSlots = 50_000

// Coverage returns what became of each slot of the schedule of region ("" = every configured
// region) that started in the since before now, the slot in progress only once a run started
// in it (docs/operations.md "Coverage"). Errors: a region without a schedule here or a period
// of more than MaxCoverageSlots slots (usage errors), the store's.
func (e *Engine) Coverage(ctx context.Context, st store.Reader, region string, since time.Duration, now time.Time) (store.Coverage, error) {
	plan, err := e.cfg.Schedule.Plan(e.cfg.Regions)
	if err != nil {
		return store.Coverage{}, err
	}
	if region != "" {
		i := slices.IndexFunc(plan, func(p schedule.Region) bool { return p.Region == region })
		if i < 0 {
			return store.Coverage{}, Usagef("trendfetch coverage --region "+strings.Join(e.cfg.Regions, ","),
				"--region %s: not scheduled here (regions: %s)", region, strings.Join(e.cfg.Regions, ", "))
		}
		plan = plan[i : i+1]
	}
	now = now.UTC()
	c := store.Coverage{From: now.Add(-since), To: now, Timezone: zoneName(e.cfg.Schedule.Location(), now),
		Regions: []store.RegionCoverage{}}
	for _, p := range plan {
		rc, err := regionCoverage(ctx, st, p, c.From, now)
		if err != nil {
			return store.Coverage{}, err
		}
		c.Regions = append(c.Regions, rc)
	}
	return c, nil
}

// zoneName is loc's IANA name, or its abbreviation at t for the local zone.
func zoneName(loc *time.Location, t time.Time) string {
	if name := loc.String(); name != "Local" {
		return name
	}
	zone, _ := t.In(loc).Zone()
	return zone
}

// regionCoverage joins p's slots that start in [from, now] with the runs started in them.
func regionCoverage(ctx context.Context, st store.Reader, p schedule.Region, from, now time.Time) (store.RegionCoverage, error) {
	rc := store.RegionCoverage{Region: p.Region, Schedule: p.Spec, Totals: map[store.SlotOutcome]int{}, Slots: []store.Slot{}}
	for _, o := range store.SlotOutcomes {
		rc.Totals[o] = 0
	}
	slots, more := schedule.Slots(p.Schedule, from, now, MaxCoverageSlots)
	if more {
		return rc, Usagef("trendfetch coverage --since 1d", "--since %s: more than %d slots of %s's schedule (%s): give a shorter period",
			now.Sub(from), MaxCoverageSlots, p.Region, p.Spec)
	}
	if len(slots) == 0 {
		return rc, nil
	}
	runs, err := st.RunsStarted(ctx, p.Region, slots[0][0], now)
	if err != nil {
		return rc, err
	}
	for _, sl := range slots {
		var in []store.Run // the runs started in this slot
		for len(runs) > 0 && (sl[1].IsZero() || runs[0].StartedAt.Before(sl[1])) {
			in, runs = append(in, runs[0]), runs[1:]
		}
		if len(in) == 0 && (sl[1].IsZero() || sl[1].After(now)) {
			break // the slot in progress, no run started yet
		}
		s := judgeSlot(in)
		s.Start, s.End = sl[0].UTC(), timePtr(sl[1])
		rc.Slots = append(rc.Slots, s)
		rc.Totals[s.Outcome]++
	}
	return rc, nil
}

// judgeSlot is the outcome of a slot with runs (oldest first): captured whole by its first
// successful run, else captured partially by its latest run that stored pages, else its
// latest run's outcome; missed without runs.
func judgeSlot(runs []store.Run) store.Slot {
	if len(runs) == 0 {
		return store.Slot{Outcome: store.SlotMissed}
	}
	ok := slices.IndexFunc(runs, func(r store.Run) bool {
		return r.Outcome == store.OutcomeSuccess || r.Outcome == store.OutcomeSuccessUnmetered
	})
	if ok >= 0 {
		return slotOf(runs[ok], store.SlotCaptured, len(runs))
	}
	if i := lastIndex(runs, func(r store.Run) bool { return r.Pages > 0 }); i >= 0 {
		return slotOf(runs[i], store.SlotCaptured, len(runs))
	}
	last := runs[len(runs)-1]
	outcome := map[store.Outcome]store.SlotOutcome{store.OutcomeDenied: store.SlotDenied, store.OutcomeFailed: store.SlotFailed,
		store.OutcomeInterrupted: store.SlotInterrupted, store.OutcomeAbandoned: store.SlotInterrupted,
		store.OutcomeRunning: store.SlotRunning}[last.Outcome]
	if outcome == "" {
		outcome = store.SlotFailed // an outcome this release does not know
	}
	return slotOf(last, outcome, len(runs))
}

// lastIndex is the index of the last element of s that f holds for, else -1.
func lastIndex[T any](s []T, f func(T) bool) int {
	for i := len(s) - 1; i >= 0; i-- {
		if f(s[i]) {
			return i
		}
	}
	return -1
}

// deniedBy finds the bucket in a denial's reason (fetch's `quota denied METHOD by bucket "B"`).
var deniedBy = regexp.MustCompile(`by bucket "([^"]+)"`)

// slotOf is a slot of outcome decided by run r, among n runs started in it.
func slotOf(r store.Run, outcome store.SlotOutcome, n int) store.Slot {
	s := store.Slot{Outcome: outcome, RunID: &r.ID, RunOutcome: &r.Outcome, Host: &r.Host, Credential: &r.Credential,
		StartedAt: timePtr(r.StartedAt), FinishedAt: timePtr(r.FinishedAt), Pages: &r.Pages, RetryAt: timePtr(r.RetryAt), Runs: n}
	if outcome == store.SlotCaptured {
		whole := r.Outcome == store.OutcomeSuccess || r.Outcome == store.OutcomeSuccessUnmetered
		s.Whole = &whole
	}
	if r.Reason != "" {
		s.Reason = &r.Reason
	}
	if m := deniedBy.FindStringSubmatch(r.Reason); m != nil && r.Outcome == store.OutcomeDenied {
		s.Bucket = &m[1]
	}
	return s
}

// timePtr is t in UTC, nil for the zero time (JSON null).
func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

// MissedSlots counts, per configured region, the slots missed in the day before now (the
// trendfetch_slots_missed gauge).
func (e *Engine) MissedSlots(ctx context.Context, st store.Reader) (map[string]int, error) {
	c, err := e.Coverage(ctx, st, "", 24*time.Hour, time.Now())
	if err != nil {
		return nil, fmt.Errorf("cannot count missed slots: %w", err)
	}
	out := map[string]int{}
	for _, rc := range c.Regions {
		out[rc.Region] = rc.Totals[store.SlotMissed]
	}
	return out, nil
}
