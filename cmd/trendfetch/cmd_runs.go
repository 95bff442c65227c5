package main

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/trendfetch/trendfetch/internal/engine"
	"github.com/trendfetch/trendfetch/internal/store"
	"github.com/trendfetch/trendfetch/internal/termtext"
)

// runsOptions is what `runs` was asked (its flags) and where it writes.
type runsOptions struct {
	io     ioStreams
	engine *engine.Engine
	limit  int
	before int64
	region string
	asJSON bool
}

// newRunsCmd is `runs`: its flags fill the options runsRun runs.
func newRunsCmd(a *app) *cobra.Command {
	o := &runsOptions{}
	cmd := &cobra.Command{
		Use:     "runs",
		Short:   "Show recent runs: region, outcome, pages, videos, units, Retry-After",
		Args:    cobra.NoArgs,
		PreRunE: a.withConfig,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.io, o.engine = a.ioStreams, a.engine()
			return runsRun(cmd.Context(), o)
		},
	}
	cmd.Flags().IntVarP(&o.limit, "limit", "n", 20, "most runs to show, newest first")
	cmd.Flags().Int64Var(&o.before, "before", 0, "only runs older than this run id (the next page; as GET /v1/runs?cursor=)")
	cmd.Flags().StringVar(&o.region, "region", "", "only runs of this region (e.g. US), as GET /v1/runs?region=")
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print runs as JSON")
	return cmd
}

// runsRun prints a page of runs, newest first, and notes the next page.
func runsRun(ctx context.Context, o *runsOptions) error {
	if o.limit < 1 {
		return usagef("trendfetch runs --limit 20", "--limit %d: must be at least 1", o.limit)
	}
	region, st, err := openRegionStore(ctx, o.engine, o.region)
	if err != nil {
		return err
	}
	defer st.Close()
	runs, err := st.RunsPage(ctx, store.RunsQuery{Region: region, Before: o.before, Limit: o.limit + 1})
	if err != nil {
		return err
	}
	if len(runs) > o.limit {
		runs = runs[:o.limit]
		fmt.Fprintf(o.io.stderr, "note: older runs: trendfetch runs --before %d\n", runs[o.limit-1].ID)
	}
	policyNotice(ctx, o.engine, o.io, st)
	if o.asJSON {
		return o.io.printJSON(runs)
	}
	return printRuns(o.io, runs)
}

// printRuns writes runs as a table for people.
func printRuns(s ioStreams, runs []store.Run) error {
	tw := table(s.stdout, "ID\tREGION\tSTARTED (UTC)\tDURATION\tPAGES\tVIDEOS\tUNITS\tOUTCOME\tREASON")
	for _, r := range runs {
		dur := "-"
		if !r.FinishedAt.IsZero() {
			dur = r.FinishedAt.Sub(r.StartedAt).Round(time.Millisecond).String()
		}
		reason := shortReason(r.Reason)
		if r.RetryAfter > 0 {
			reason += fmt.Sprintf(" (retry at %s)", r.RetryAt.UTC().Format(utcSecond))
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", r.ID, r.Region,
			r.StartedAt.UTC().Format(utcSecond), dur, r.Pages, r.Videos,
			formatUnits(r.Units, r.Unmetered), r.Outcome, reason)
	}
	return tw.Flush()
}

// shortReason is a run's reason for the table (`runs --json` has it all): URLs replaced by their
// host and path, control characters made visible, at most 72 characters (termtext.Clip).
func shortReason(reason string) string {
	reason = urlRE.ReplaceAllStringFunc(reason, func(raw string) string {
		u, err := url.Parse(strings.Trim(raw, `"'`))
		if err != nil || u.Host == "" {
			return raw
		}
		return u.Host + u.Path
	})
	return termtext.Clip(strings.Join(strings.Fields(reason), " "), 72)
}

var urlRE = regexp.MustCompile(`"?https?://[^\s"]+"?`)

// formatUnits renders units per bucket and unmetered (fail-open) calls:
// "units=4 search=1 unmetered=2".
func formatUnits(units map[string]int64, unmetered int) string {
	var parts []string
	for _, n := range slices.Sorted(maps.Keys(units)) {
		parts = append(parts, fmt.Sprintf("%s=%d", n, units[n]))
	}
	if unmetered > 0 {
		parts = append(parts, fmt.Sprintf("unmetered=%d", unmetered))
	}
	return cmp.Or(strings.Join(parts, " "), "0")
}

// policyNotice prints engine.PolicyNote to stderr when there is one.
func policyNotice(ctx context.Context, e *engine.Engine, s ioStreams, st *store.Store) {
	if note := e.PolicyNote(ctx, st); note != "" {
		fmt.Fprintf(s.stderr, "note: %s\n", note)
	}
}
