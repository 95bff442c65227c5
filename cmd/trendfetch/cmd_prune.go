package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/trendfetch/trendfetch/internal/duration"
	"github.com/trendfetch/trendfetch/internal/engine"
	"github.com/trendfetch/trendfetch/internal/store"
)

func newPruneCmd(a *app) *cobra.Command {
	var (
		olderThan, asOf, policy string
		dryRun, asJSON          bool
	)
	cmd := &cobra.Command{
		Use:   "prune [--older-than DURATION | --as-of TIME] [--dry-run]",
		Short: "Delete what the storage policy (or an age) no longer allows: old captures, stats samples, text",
		Long: `Without --older-than, apply the storage policy (store.policy, or --policy) as
every run does, judged at --as-of (default now), and report per class what it
removed: captures (with their entries), stats samples, videos whose text was
removed (id kept), old text versions, and videos nothing references any more.
  youtube  statistics and text older than 30 days
  amended  statistics older than 36 months, text older than 30 days
  keep     nothing
With store.policy unset, a database that held data before store.policy existed
keeps everything (runs warn); a new one follows youtube.

With --older-than, delete chart, category and search captures (with their
entries) and stats samples older than it instead, then every video no capture
or sample references any more; runs, channels and categories are kept. SQLite
reuses the pages it frees: the file never shrinks (trendfetch never truncates
it, as a running serve maps it into memory: docs/design.md §6).`,
		Example: "  trendfetch prune --dry-run --as-of 2026-12-31 --json\n" +
			"  trendfetch prune --policy amended --dry-run\n" +
			"  trendfetch prune --older-than 90d",
		Args:    cobra.NoArgs,
		PreRunE: a.withConfig,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := engine.PruneRequest{DryRun: dryRun}
			var err error
			if olderThan != "" {
				if q.OlderThan, err = duration.ParseAge(olderThan); err != nil {
					return usagef("trendfetch prune --older-than 90d", "--older-than %q: %v", olderThan, err)
				}
				if asOf != "" || policy != "" {
					return usagef("trendfetch prune --older-than 90d", "--older-than cannot be combined with --as-of or --policy")
				}
			}
			if asOf != "" {
				if q.AsOf, err = store.ParseAt(asOf); err != nil {
					return usagef("trendfetch prune --as-of 2026-12-31 --dry-run", "--as-of %q: %v", asOf, err)
				}
			}
			if q.Policy, err = store.ParsePolicy(policy); err != nil {
				return usagef("trendfetch prune --policy youtube --dry-run", "--policy %q: %v", policy, err)
			}
			res, err := a.engine().Prune(cmd.Context(), q)
			if err != nil {
				return err
			}
			rep := res.Report
			if asJSON {
				out := struct {
					Policy *store.Policy `json:"policy"` // null with --older-than
					AsOf   time.Time     `json:"as_of"`
					Before *time.Time    `json:"before"` // null with a policy
					DryRun bool          `json:"dry_run"`
					store.PruneReport
				}{AsOf: res.AsOf.UTC(), DryRun: dryRun, PruneReport: rep}
				if res.Policy != "" {
					out.Policy = &res.Policy
				}
				if before := res.Before.UTC(); !before.IsZero() {
					out.Before = &before
				}
				return a.printJSON(out)
			}
			verb := "removed"
			if dryRun {
				verb = "would remove"
			}
			what := "policy " + string(res.Policy) + " as of " + res.AsOf.UTC().Format("2006-01-02 15:04") + " UTC"
			if !res.Before.IsZero() {
				what = "older than " + res.Before.UTC().Format("2006-01-02 15:04") + " UTC"
			}
			fmt.Fprintf(a.stdout, "%s %d captures (%d entries), %d stats samples, %d text versions, %d videos' text, %d videos (%s)\n",
				verb, rep.Captures, rep.Entries, rep.Samples, rep.Texts, rep.TextsCleared, rep.Videos, what)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&olderThan, "older-than", "", "delete captures and samples older than this instead of applying the policy: a Go duration (2160h) or days (90d)")
	f.StringVar(&asOf, "as-of", "", "judge ages at this time instead of now (RFC 3339 or UTC date), e.g. with --dry-run")
	f.StringVar(&policy, "policy", "", "apply this policy instead of store.policy: youtube, amended or keep")
	f.BoolVar(&dryRun, "dry-run", false, "report what would be removed, remove nothing")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}
