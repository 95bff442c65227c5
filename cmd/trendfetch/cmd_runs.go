package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/trendfetch/trendfetch/internal/store"
)

func newRunsCmd(a *app) *cobra.Command {
	var (
		limit  int
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "Show recent runs: region, outcome, pages, videos, units, Retry-After",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 1 {
				return usagef("trendfetch runs --limit 20", "--limit %d: must be at least 1", limit)
			}
			if err := a.loadConfig(); err != nil {
				return err
			}
			st, err := store.OpenReadOnly(cmd.Context(), a.cfg.Database)
			if err != nil {
				return err
			}
			defer st.Close()
			runs, err := st.Runs(cmd.Context(), limit)
			if err != nil {
				return err
			}
			if asJSON {
				if runs == nil {
					runs = []store.Run{}
				}
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(runs)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tREGION\tSTARTED\tDURATION\tPAGES\tVIDEOS\tUNITS\tOUTCOME\tREASON")
			for _, r := range runs {
				dur := "-"
				if !r.FinishedAt.IsZero() {
					dur = r.FinishedAt.Sub(r.StartedAt).Round(time.Millisecond).String()
				}
				reason := r.Reason
				if r.RetryAfter > 0 {
					reason += fmt.Sprintf(" (retry at %s)", r.RetryAt.Local().Format("2006-01-02 15:04:05"))
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", r.ID, r.Region,
					r.StartedAt.Local().Format("2006-01-02 15:04:05"), dur, r.Pages, r.Videos,
					formatUnits(r.Units, r.Unmetered), r.Outcome, reason)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().IntVarP(&limit, "limit", "n", 20, "most runs to show, newest first")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print runs as JSON")
	return cmd
}

// formatUnits renders units per bucket as "units=4 search=1", plus
// unmetered (fail-open) calls.
func formatUnits(units map[string]int64, unmetered int) string {
	names := make([]string, 0, len(units))
	for n := range units {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names)+1)
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s=%d", n, units[n]))
	}
	if unmetered > 0 {
		parts = append(parts, fmt.Sprintf("unmetered=%d", unmetered))
	}
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, " ")
}
