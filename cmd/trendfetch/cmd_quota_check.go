package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/trendfetch/trendfetch/internal/config"
	"github.com/trendfetch/trendfetch/internal/engine"
	"github.com/trendfetch/trendfetch/internal/exitcode"
	"github.com/trendfetch/trendfetch/internal/termtext"
)

// errWouldNotFit ends `quota check` when the calls fit later (exit 75);
// errNeverFits when they exceed a bucket's limit (exit 2).
var (
	errWouldNotFit = exitcode.New(exitcode.TempFail, "the calls do not fit now")
	errNeverFits   = errors.New("the calls can never fit: they exceed a bucket's limit")
)

// quotaOptions is what `quota check`, `charge` or `reset` was asked (its
// flags), the configuration it checks calls against and where it writes.
type quotaOptions struct {
	io                 ioStreams
	engine             *engine.Engine
	cfg                *config.Config
	method, credential string // credential: reset's --credential
	count              int64
	asJSON, yes        bool
}

func newQuotaCheckCmd(a *app) *cobra.Command {
	o := &quotaOptions{}
	cmd := &cobra.Command{
		Use:   "check --method METHOD [--count N] [--json]",
		Short: "Tell whether N calls of a method would fit now, and if not when; reserves nothing",
		Long: `Tell whether N calls of METHOD (a key of quota.costs) fit the credential's
buckets now, and if not, when: exactly when the status knows (one call of
cost 1, a call of the largest cost, a calendar bucket's next Pacific midnight,
an upstream exhaustion marker), otherwise the earliest and the latest time.
Exit 0 when the calls fit now, 75 when they fit later, 2 when they never fit
(more than a bucket's limit).`,
		Example: "  trendfetch quota check --method search.list --count 5\n  trendfetch quota check --method videos.list --json",
		Args:    cobra.NoArgs,
		PreRunE: a.withConfig,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.io, o.engine, o.cfg = a.ioStreams, a.engine(), a.cfg
			return quotaCheckRun(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.method, "method", "", "API method, e.g. search.list (a key of quota.costs)")
	cmd.Flags().Int64Var(&o.count, "count", 1, "number of calls")
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print the answer as JSON")
	_ = cmd.MarkFlagRequired("method")
	return cmd
}

// quotaCheckRun prints whether the calls fit now, later (errWouldNotFit,
// exit 75) or never (errNeverFits, exit 2).
func quotaCheckRun(ctx context.Context, o *quotaOptions) error {
	if err := o.checkCalls("trendfetch quota check"); err != nil {
		return err
	}
	out, err := o.engine.Check(ctx, o.method, o.count)
	if err != nil {
		return err
	}
	if !o.asJSON {
		printCheck(o.io, out)
	} else if err := o.io.printJSON(out); err != nil {
		return err
	}
	switch {
	case out.Fits:
		return nil
	case out.FitsBy == nil:
		return &usageError{Err: errNeverFits}
	}
	return errWouldNotFit
}

// checkCalls refuses (exit 2) a --count below 1 and a method not in
// quota.costs, hinting cmdLine with the closest one.
func (o *quotaOptions) checkCalls(cmdLine string) error {
	if o.count < 1 {
		return usagef(cmdLine+" --method videos.list --count 1", "--count %d: must be at least 1", o.count)
	}
	if _, ok := o.cfg.Quota.Costs[o.method]; ok {
		return nil
	}
	known := slices.Sorted(maps.Keys(o.cfg.Quota.Costs))
	return usagef(cmdLine+" --method "+cmp.Or(termtext.Closest(o.method, known), methodOf(o.method, known), known[0]),
		"--method %q: not in the cost table (quota.costs has %s)", termtext.Clip(o.method, 80), strings.Join(known, ", "))
}

// methodOf returns the shortest of known that is prefix and a dot ("search" -> search.list), or "".
func methodOf(prefix string, known []string) string {
	best := ""
	for _, k := range known {
		if strings.HasPrefix(k, prefix+".") && (best == "" || len(k) < len(best)) {
			best = k
		}
	}
	return best
}

// printCheck writes the answer of quota check for people.
func printCheck(s ioStreams, out engine.CheckResult) {
	calls := fmt.Sprintf("%d %s call", out.Count, out.Method)
	fit := "fits"
	if out.Count != 1 {
		calls, fit = calls+"s", "fit"
	}
	var parts []string
	for _, b := range out.Buckets {
		parts = append(parts, fmt.Sprintf("%s needs %d, %d of %d left", b.Name, b.Need, b.Remaining, b.Limit))
	}
	detail := strings.Join(parts, "; ")
	switch {
	case out.Fits:
		fmt.Fprintf(s.stdout, "%s %s now (credential %s: %s)\n", calls, fit, out.Credential, detail)
	case out.FitsBy == nil:
		fmt.Fprintf(s.stdout, "%s never %s (credential %s: %s)\n", calls, fit, out.Credential, detail)
	case out.FitsAt.Equal(*out.FitsBy):
		fmt.Fprintf(s.stdout, "%s %s at %s (credential %s: %s)\n", calls, fit, out.FitsAt.Format("2006-01-02 15:04:05 MST"), out.Credential, detail)
	default:
		fmt.Fprintf(s.stdout, "%s %s not before %s and by %s at the latest (credential %s: %s)\n", calls, fit,
			out.FitsAt.Format("2006-01-02 15:04:05 MST"), out.FitsBy.Format("2006-01-02 15:04:05 MST"), out.Credential, detail)
	}
}
