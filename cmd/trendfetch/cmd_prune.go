package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/trendfetch/trendfetch/internal/duration"
	"github.com/trendfetch/trendfetch/internal/engine"
	"github.com/trendfetch/trendfetch/internal/store"
)

// pruneOptions is what `prune` was asked (its flags) and where it writes.
type pruneOptions struct {
	io                      ioStreams
	engine                  *engine.Engine
	olderThan, asOf, policy string
	dryRun, asJSON          bool
}

// newPruneCmd is `prune`: its flags fill the options pruneRun runs.
func newPruneCmd(a *app) *cobra.Command {
	o := &pruneOptions{}
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
			o.io, o.engine = a.ioStreams, a.engine()
			return pruneRun(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.olderThan, "older-than", "", "delete captures and samples older than this instead of applying the policy: a Go duration (2160h) or days (90d)")
	f.StringVar(&o.asOf, "as-of", "", "judge ages at this time instead of now (RFC 3339 or UTC date), e.g. with --dry-run")
	f.StringVar(&o.policy, "policy", "", "apply this policy instead of store.policy: youtube, amended or keep")
	f.BoolVar(&o.dryRun, "dry-run", false, "report what would be removed, remove nothing")
	f.BoolVar(&o.asJSON, "json", false, "print the report as JSON")
	return cmd
}

// pruneRun prunes (or with --dry-run counts) what o asks and reports it.
func pruneRun(ctx context.Context, o *pruneOptions) error {
	q, err := o.request()
	if err != nil {
		return err
	}
	res, err := o.engine.Prune(ctx, q)
	if err != nil {
		return err
	}
	if o.asJSON {
		return printPruneJSON(o.io, res, o.dryRun)
	}
	printPrune(o.io, res, o.dryRun)
	return nil
}

// request is the engine's prune of o's flags; a flag that does not parse or
// fit the others is a usage error.
func (o *pruneOptions) request() (engine.PruneRequest, error) {
	q := engine.PruneRequest{DryRun: o.dryRun}
	var err error
	if o.olderThan != "" {
		if q.OlderThan, err = duration.ParseAge(o.olderThan); err != nil {
			return q, usagef("trendfetch prune --older-than 90d", "--older-than %q: %v", o.olderThan, err)
		}
		if o.asOf != "" || o.policy != "" {
			return q, usagef("trendfetch prune --older-than 90d", "--older-than cannot be combined with --as-of or --policy")
		}
	}
	if o.asOf != "" {
		if q.AsOf, err = store.ParseAt(o.asOf); err != nil {
			return q, usagef("trendfetch prune --as-of 2026-12-31 --dry-run", "--as-of %q: %v", o.asOf, err)
		}
	}
	if q.Policy, err = store.ParsePolicy(o.policy); err != nil {
		return q, usagef("trendfetch prune --policy youtube --dry-run", "--policy %q: %v", o.policy, err)
	}
	return q, nil
}

// printPruneJSON writes res as `prune --json`: policy null with --older-than, before null with a policy.
func printPruneJSON(s ioStreams, res engine.PruneResult, dryRun bool) error {
	out := struct {
		Policy *store.Policy `json:"policy"`
		AsOf   time.Time     `json:"as_of"`
		Before *time.Time    `json:"before"`
		DryRun bool          `json:"dry_run"`
		store.PruneReport
	}{AsOf: res.AsOf.UTC(), DryRun: dryRun, PruneReport: res.Report}
	if res.Policy != "" {
		out.Policy = &res.Policy
	}
	if before := res.Before.UTC(); !before.IsZero() {
		out.Before = &before
	}
	return s.printJSON(out)
}

// printPrune writes res for people: one line of counts and what was judged.
func printPrune(s ioStreams, res engine.PruneResult, dryRun bool) {
	verb := "removed"
	if dryRun {
		verb = "would remove"
	}
	what := "policy " + string(res.Policy) + " as of " + res.AsOf.UTC().Format(utcMinute) + " UTC"
	if !res.Before.IsZero() {
		what = "older than " + res.Before.UTC().Format(utcMinute) + " UTC"
	}
	rep := res.Report
	fmt.Fprintf(s.stdout, "%s %d captures (%d entries), %d stats samples, %d text versions, %d videos' text, %d videos (%s)\n",
		verb, rep.Captures, rep.Entries, rep.Samples, rep.Texts, rep.TextsCleared, rep.Videos, what)
}
