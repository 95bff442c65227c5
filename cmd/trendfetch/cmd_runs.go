package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/trendfetch/trendfetch/internal/store"
	"github.com/trendfetch/trendfetch/internal/termtext"
)

func newRunsCmd(a *app) *cobra.Command {
	var (
		limit  int
		before int64
		region string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:     "runs",
		Short:   "Show recent runs: region, outcome, pages, videos, units, Retry-After",
		Args:    cobra.NoArgs,
		PreRunE: a.withConfig,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 1 {
				return usagef("trendfetch runs --limit 20", "--limit %d: must be at least 1", limit)
			}
			region, err := parseRegion(region)
			if err != nil {
				return err
			}
			st, err := a.openReadStore(cmd.Context())
			if err != nil {
				return err
			}
			var runs []store.Run
			if st != nil {
				defer st.Close()
				if runs, err = st.RunsPage(cmd.Context(), store.RunsQuery{Region: region, Before: before, Limit: limit + 1}); err != nil {
					return err
				}
				if len(runs) > limit {
					runs = runs[:limit]
					fmt.Fprintf(a.stderr, "note: older runs: trendfetch runs --before %d\n", runs[limit-1].ID)
				}
				a.policyNotice(cmd.Context(), st)
			}
			if asJSON {
				return a.printJSON(runs)
			}
			tw := table(a.stdout, "ID\tREGION\tSTARTED (UTC)\tDURATION\tPAGES\tVIDEOS\tUNITS\tOUTCOME\tREASON")
			for _, r := range runs {
				dur := "-"
				if !r.FinishedAt.IsZero() {
					dur = r.FinishedAt.Sub(r.StartedAt).Round(time.Millisecond).String()
				}
				reason := shortReason(r.Reason)
				if r.RetryAfter > 0 {
					reason += fmt.Sprintf(" (retry at %s)", r.RetryAt.UTC().Format("2006-01-02 15:04:05"))
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", r.ID, r.Region,
					r.StartedAt.UTC().Format("2006-01-02 15:04:05"), dur, r.Pages, r.Videos,
					formatUnits(r.Units, r.Unmetered), r.Outcome, reason)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().IntVarP(&limit, "limit", "n", 20, "most runs to show, newest first")
	cmd.Flags().Int64Var(&before, "before", 0, "only runs older than this run id (the next page; as GET /v1/runs?cursor=)")
	cmd.Flags().StringVar(&region, "region", "", "only runs of this region (e.g. US), as GET /v1/runs?region=")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print runs as JSON")
	return cmd
}

// shortReason is a run's reason for the table (`runs --json` has it all):
// URLs replaced by their host and path, control characters made visible,
// at most 72 characters (termtext.Clip).
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

// openReadStore opens the database for a read-only command; one that does
// not exist yet is nil, noted on stderr (the command prints nothing found).
func (a *app) openReadStore(ctx context.Context) (store.Backend, error) {
	st, err := a.engine().OpenStore(ctx, true)
	if nd := (*store.NoDatabaseError)(nil); errors.As(err, &nd) {
		fmt.Fprintf(a.stderr, "note: no database at %s yet: nothing recorded; `trendfetch run` creates it\n", nd.Path)
		return nil, nil
	}
	return st, err
}

// policyNotice prints engine.PolicyNote to stderr when there is one.
func (a *app) policyNotice(ctx context.Context, st store.Backend) {
	if note := a.engine().PolicyNote(ctx, st); note != "" {
		fmt.Fprintf(a.stderr, "note: %s\n", note)
	}
}
