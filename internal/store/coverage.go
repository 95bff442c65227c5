package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// RunsStarted returns the runs of region that started in [from, to], oldest first (by start,
// then id), each reason cut to MaxReasonBytes.
func (s *Store) RunsStarted(ctx context.Context, region string, from, to time.Time) ([]Run, error) {
	var out []Run
	err := each(ctx, s.db, `
SELECT `+runColumns+`
FROM runs
WHERE region = ?1 AND started_at >= ?2 AND started_at <= ?3
ORDER BY started_at, id`, []any{region, fmtTime(from), fmtTime(to), MaxReasonBytes + 1}, func(rows *sql.Rows) error {
		r, err := scanRun(rows)
		out = append(out, r)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("cannot list the runs of %s: %w", region, err)
	}
	return out, nil
}

// SlotOutcome is what became of a slot of a region's schedule (docs/operations.md "Coverage").
type SlotOutcome string

// Slot outcomes, in the order of SlotOutcomes.
const (
	SlotCaptured    SlotOutcome = "captured"    // a run stored pages: whole (it succeeded) or partial
	SlotDenied      SlotOutcome = "denied"      // its latest run was denied (Bucket, RetryAt)
	SlotFailed      SlotOutcome = "failed"      // its latest run failed (Reason)
	SlotInterrupted SlotOutcome = "interrupted" // its latest run was interrupted or its process died
	SlotRunning     SlotOutcome = "running"     // its latest run has not finished
	SlotMissed      SlotOutcome = "missed"      // no run started in it
)

// SlotOutcomes lists every SlotOutcome, as totals are printed.
var SlotOutcomes = []SlotOutcome{SlotCaptured, SlotDenied, SlotFailed, SlotInterrupted, SlotRunning, SlotMissed}

// Slot is one slot of a region's schedule, from its tick to the next, and the run that decided
// its outcome (all its fields null when missed).
type Slot struct {
	Start time.Time `json:"slot_start"`
	// End is the next tick (null: none).
	End     *time.Time  `json:"slot_end"`
	Outcome SlotOutcome `json:"outcome"`
	// Whole is set when captured: true when the run succeeded, false for pages stored by a
	// run that then stopped (RunOutcome and Reason say how).
	Whole      *bool      `json:"whole"`
	RunID      *int64     `json:"run_id"`
	RunOutcome *Outcome   `json:"run_outcome"`
	Host       *string    `json:"host"`
	Credential *string    `json:"credential"`
	StartedAt  *time.Time `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
	Pages      *int       `json:"pages"`
	Reason     *string    `json:"reason"`
	// Bucket is the quota bucket that denied the run (null: not a bucket's denial).
	Bucket  *string    `json:"bucket"`
	RetryAt *time.Time `json:"retry_at"`
	// Runs counts the runs started in the slot, by any host.
	Runs int `json:"runs"`
}

// RegionCoverage is what became of each slot of a region's schedule in a period.
type RegionCoverage struct {
	Region   string `json:"region"`
	Schedule string `json:"schedule"`
	// Totals counts the slots per outcome, every SlotOutcome present.
	Totals map[SlotOutcome]int `json:"totals"`
	Slots  []Slot              `json:"slots"`
}

// Coverage is the coverage of the scheduled regions from From to To (UTC); Timezone is the
// schedule's time zone, in which people read the slots.
type Coverage struct {
	From     time.Time        `json:"from"`
	To       time.Time        `json:"to"`
	Timezone string           `json:"timezone"`
	Regions  []RegionCoverage `json:"regions"`
}

// DatasetRegions returns the regions the dataset holds a capture or a run of, in code order.
func (s *Store) DatasetRegions(ctx context.Context) ([]string, error) {
	rs, err := column[string](ctx, s.db, `SELECT region FROM captures UNION SELECT region FROM runs ORDER BY region`)
	if err != nil {
		return nil, fmt.Errorf("cannot list the dataset's regions: %w", err)
	}
	return rs, nil
}
