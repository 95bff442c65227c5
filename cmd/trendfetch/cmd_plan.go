package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/trendfetch/trendfetch/internal/config"
	"github.com/trendfetch/trendfetch/internal/exitcode"
	"github.com/trendfetch/trendfetch/internal/plan"
	"github.com/trendfetch/trendfetch/internal/termtext"
)

// errPlan is the error of a plan that does not fit (exit 2: a configuration
// to fix); the table above it says which bucket.
var errPlan = exitcode.New(exitcode.Usage, "the configuration does not fit its quota")

// planOptions is what `plan` was asked (its flags), the configuration it plans and where it writes.
type planOptions struct {
	io             ioStreams
	cfg            *config.Config
	log            zerolog.Logger
	asJSON, strict bool
	runsPerDay     int
}

func newPlanCmd(a *app) *cobra.Command {
	o := &planOptions{}
	cmd := &cobra.Command{
		Use:   "plan [--json] [--runs-per-day N] [--strict]",
		Short: "Estimate the quota units a Pacific day of this configuration spends, per bucket",
		Long: `Estimate, from the configuration in force (regions, schedule or --runs-per-day,
chart pages and category charts, searches and their max_pages,
stats.track_for/every, channels and categories refresh, the text refresh of
store.policy amended capped by store.refresh_per_day, api.retries), the calls a
Pacific day (Google's quota day) sends and the units each bucket is charged: the
least, the expected and the most (every page full, every followed video due,
the whole chart new every day, the refresh cap spent, every call retried
api.retries times: each attempt costs), against each bucket's limit and
Google's 2026 allocations (10,000 units, search.list 100 calls,
videos.batchGetStats 10,000 units). Nothing is sent, reserved or opened. Exit 0
when the expected use fits every bucket (a warning line when the most does
not), else 2.`,
		Example: "  trendfetch plan\n  trendfetch --config /etc/trendfetch/trendfetch.yaml plan --strict\n  trendfetch plan --runs-per-day 24 --json",
		Args:    cobra.NoArgs,
		PreRunE: a.withConfig,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.io, o.cfg, o.log = a.ioStreams, a.cfg, a.log
			return planRun(o)
		},
	}
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print the plan as JSON")
	cmd.Flags().BoolVar(&o.strict, "strict", false, "exit 2 also when the most does not fit (for deploy gates)")
	cmd.Flags().IntVar(&o.runsPerDay, "runs-per-day", 0, "runs of each region a day, instead of the schedule's")
	return cmd
}

// planRun prints the plan of o.cfg: errPlan (exit 2) when its expected use
// does not fit a bucket, or with --strict its most; a warning when only its most does not.
func planRun(o *planOptions) error {
	if o.runsPerDay < 0 || o.runsPerDay > 86400 {
		return usagef("trendfetch plan --runs-per-day 12", "--runs-per-day %d: want 1-86400 (0: from the schedule)", o.runsPerDay)
	}
	p, err := plan.Compute(o.cfg, plan.Options{RunsPerDay: o.runsPerDay})
	if err != nil {
		return err
	}
	if !o.asJSON {
		printPlan(o.io, p)
	} else if err := o.io.printJSON(p); err != nil {
		return err
	}
	switch {
	case !p.Fits():
		return errPlan
	case !p.MostFits() && o.strict:
		return fmt.Errorf("%w at its most (--strict)", errPlan)
	case !p.MostFits():
		o.log.Warn().Msg("the most this configuration can spend does not fit a bucket: see plan")
	}
	return nil
}

// printPlan writes the plan for people: the regions' runs, then one line a
// bucket with its verdict and the schedule that dominates it.
func printPlan(s ioStreams, p *plan.Plan) {
	fmt.Fprintf(s.stdout, "Plan of one Pacific day, %s (%gh, from %s UTC):\n", p.Day, p.Hours, p.Start.Format("2006-01-02 15:04"))
	runs := map[string][]string{}
	var order []string
	for _, r := range p.Regions {
		key := fmt.Sprintf("%s: %d runs", r.Schedule, r.Runs)
		if runs[key] == nil {
			order = append(order, key)
		}
		runs[key] = append(runs[key], r.Region)
	}
	for _, k := range order {
		fmt.Fprintf(s.stdout, "  %s %s\n", strings.Join(runs[k], " "), k)
	}
	printPlanBuckets(s, p.Buckets, false)
	if slices.ContainsFunc(p.Buckets, func(b plan.Bucket) bool { return b.Shadow }) {
		fmt.Fprintln(s.stdout, "Shadow buckets (never deny; the verdict is what each would do):")
		printPlanBuckets(s, p.Buckets, true)
	}
}

// printPlanBuckets writes the table of the buckets whose Shadow is shadow.
func printPlanBuckets(s ioStreams, buckets []plan.Bucket, shadow bool) {
	tw := table(s.stdout, "BUCKET\tLEAST\tEXPECTED\tMOST\tLIMIT\tVERDICT\tDOMINATED BY")
	for _, b := range buckets {
		if b.Shadow != shadow {
			continue
		}
		name := b.Name
		if b.Scope != "config" {
			name = "google:" + b.Name
		}
		dom := "-"
		if b.Dominant.Units > 0 {
			dom = fmt.Sprintf("%s %s: %s of %s units", strings.Join(b.Dominant.Regions, " "), b.Dominant.Schedule, termtext.Thousands(b.Dominant.Units), termtext.Thousands(b.Limit))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, termtext.Thousands(b.Units.Least), termtext.Thousands(b.Units.Expected),
			termtext.Thousands(b.Units.Most), termtext.Thousands(b.Limit), b.Verdict, dom)
	}
	tw.Flush()
}
