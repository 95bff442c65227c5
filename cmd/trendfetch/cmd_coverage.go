package main

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/trendfetch/trendfetch/internal/duration"
	"github.com/trendfetch/trendfetch/internal/engine"
	"github.com/trendfetch/trendfetch/internal/store"
)

// coverageOptions is what `coverage` was asked (its flags) and where it writes.
type coverageOptions struct {
	io     ioStreams
	engine *engine.Engine
	region string
	since  string
	asJSON bool
}

// newCoverageCmd is `coverage`.
func newCoverageCmd(a *app) *cobra.Command {
	o := &coverageOptions{}
	cmd := &cobra.Command{
		Use:   "coverage",
		Short: "Show each slot of the regions' schedules: captured (by which host and run), denied, failed, interrupted or missed",
		Long: `Show what became of each slot of each configured region's schedule (from a tick,
stagger included, to the next) that started in the period: captured by a run that stored pages
(whole when it succeeded, else partial), denied, failed, interrupted, running, or missed (no run
started in it), with a total per outcome. The slot in progress is listed once a run started in it.`,
		Example: "  trendfetch coverage\n  trendfetch coverage --region US --since 7d --json",
		Args:    cobra.NoArgs,
		PreRunE: a.withConfig,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.io, o.engine = a.ioStreams, a.engine()
			return coverageRun(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.region, "region", "", "only this region (e.g. US), as GET /v1/coverage?region=")
	cmd.Flags().StringVar(&o.since, "since", "24h", "the period before now whose slots are listed (e.g. 24h, 7d)")
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print the coverage as JSON")
	return cmd
}

// coverageRun prints the coverage o asks for.
func coverageRun(ctx context.Context, o *coverageOptions) error {
	since, err := duration.Parse(o.since)
	if err == nil && since <= 0 {
		err = fmt.Errorf("want a positive duration such as 24h or 7d")
	}
	if err != nil {
		return usagef("trendfetch coverage --since 7d", "--since %q: %v", o.since, err)
	}
	region, st, err := openRegionStore(ctx, o.engine, o.region)
	if err != nil {
		return err
	}
	defer st.Close()
	c, err := o.engine.Coverage(ctx, st, region, since, time.Now())
	if err != nil {
		return err
	}
	if o.asJSON {
		return o.io.printJSON(c)
	}
	return printCoverage(o.io, c)
}

// printCoverage writes c for people: per region a table of its slots, then its totals, times
// in the schedule's time zone (named).
func printCoverage(s ioStreams, c store.Coverage) error {
	loc, err := time.LoadLocation(c.Timezone)
	if err != nil {
		loc = time.Local // an abbreviation: the local zone's
	}
	const layout = "2006-01-02 15:04"
	fmt.Fprintf(s.stdout, "Slots from %s to %s (times in %s)\n", c.From.In(loc).Format(layout), c.To.In(loc).Format(layout), c.Timezone)
	for _, rc := range c.Regions {
		fmt.Fprintf(s.stdout, "\n%s (%s)\n", rc.Region, rc.Schedule)
		tw := table(s.stdout, "SLOT\tOUTCOME\tHOST\tRUN\tSTARTED\tDETAIL")
		for _, sl := range rc.Slots {
			host, run, started := "-", "-", "-"
			if sl.RunID != nil {
				host, run, started = cmp.Or(*sl.Host, "?"), fmt.Sprint(*sl.RunID), sl.StartedAt.In(loc).Format("15:04:05")
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", sl.Start.In(loc).Format(layout), sl.Outcome, host, run, started, slotDetail(sl, loc))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		var totals []string
		for _, o := range store.SlotOutcomes {
			totals = append(totals, fmt.Sprintf("%s %d", o, rc.Totals[o]))
		}
		fmt.Fprintf(s.stdout, "totals: %s\n", strings.Join(totals, ", "))
	}
	return nil
}

// slotDetail is a slot's DETAIL column: whole or partial, the bucket and retry time of a
// denial, the reason of the rest, the runs started in it when several.
func slotDetail(sl store.Slot, loc *time.Location) string {
	var parts []string
	switch {
	case sl.Outcome == store.SlotMissed:
		parts = append(parts, "no run started")
	case sl.Whole != nil && *sl.Whole:
		parts = append(parts, "whole")
	case sl.Whole != nil:
		parts = append(parts, "partial: "+string(*sl.RunOutcome))
	}
	if sl.Bucket != nil {
		parts = append(parts, "bucket "+*sl.Bucket)
	}
	if sl.RetryAt != nil {
		parts = append(parts, "retry at "+sl.RetryAt.In(loc).Format("2006-01-02 15:04"))
	}
	if sl.Reason != nil && sl.Bucket == nil && (sl.Whole == nil || !*sl.Whole) {
		parts = append(parts, shortReason(*sl.Reason))
	}
	if sl.Runs > 1 {
		parts = append(parts, fmt.Sprintf("%d runs", sl.Runs))
	}
	return strings.Join(parts, "; ")
}
