package main

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/trendfetch/trendfetch/internal/engine"
	"github.com/trendfetch/trendfetch/internal/fetch"
	"github.com/trendfetch/trendfetch/internal/quota"
	"github.com/trendfetch/trendfetch/internal/termtext"
)

func newQuotaCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "quota",
		Short: "Inspect and manage the shared quota limiter",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usagef("trendfetch quota status", "quota needs a subcommand: status, check, charge or reset")
		},
	}
	cmd.AddCommand(newQuotaStatusCmd(a), newQuotaCheckCmd(a), newQuotaChargeCmd(a), newQuotaResetCmd(a))
	return cmd
}

func newQuotaStatusCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show units spent, left, and when capacity returns, per bucket",
		Long: `Show, per bucket of the credential: units used in the sliding window, units
left, the oldest entry, when one more unit and the largest configured cost
fit again (Retry-After), and units spent since the last Pacific midnight
(Google's quota day). Reading the status admits and changes nothing.`,
		Args:    cobra.NoArgs,
		PreRunE: a.withConfig,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := a.engine().QuotaStatus(cmd.Context(), a.cfg.Credential)
			if err != nil {
				return err
			}
			if asJSON {
				v := st.View()
				v.Preset = a.cfg.Quota.Preset
				if err := a.printJSON(v); err != nil {
					return err
				}
			} else if !errors.As(st.Err, new(*quota.AccessError)) {
				printStatus(a, st)
			}
			// The storage policy's note, as `runs` prints it (best effort).
			if db, err := a.engine().OpenStore(cmd.Context(), true); err == nil {
				a.policyNotice(cmd.Context(), db)
				db.Close()
			}
			return engine.StatusError(st)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	return cmd
}

func printStatus(a *app, st quota.Status) {
	reach := fmt.Sprintf("reachable, %s", st.Latency.Round(10*time.Microsecond))
	if !st.Reachable {
		reach = "UNREACHABLE: " + st.Err.Error()
	}
	fmt.Fprintf(a.stdout, "credential %s · backend %s (%s) · preset %s\n", st.Credential, st.Backend, reach, a.cfg.Quota.Preset)
	if !st.Reachable {
		return
	}
	for _, m := range st.Marks {
		what := "the credential (every call site)"
		if m.Site != "" {
			what = m.Site + " (its own Google quota; the other call sites go on)"
		}
		fmt.Fprintf(a.stdout, "SPENT upstream until %s: %s; the API answered %s\n", m.Until.UTC().Format(time.RFC3339), what, m.Why)
	}
	tw := table(a.stdout, "BUCKET\tUSED\t\tLEFT\tWINDOW\tTODAY (PT)\t1 UNIT IN\tMAX COST IN")
	for _, b := range st.Buckets {
		window := b.Window.String()
		if b.Calendar {
			window = "Pacific day"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%d\t%s\t%d\t%s\t%s\n", b.Name, termtext.Bar(b.Used, b.Limit, 20), b.Used, b.Limit,
			b.Remaining, window, b.UsedToday, wait(b.RetryAfterOne), fmt.Sprintf("%s (%d)", wait(b.RetryAfterMax), b.MaxCost))
	}
	tw.Flush()
	if !st.Now.IsZero() {
		next := quota.NextPacificMidnight(st.Now)
		fmt.Fprintf(a.stdout, "Google's quota day resets at %s (in %s)\n", next.UTC().Format("2006-01-02 15:04 MST"), next.Sub(st.Now).Round(time.Minute))
	}
}

func wait(d time.Duration) string {
	if d <= 0 {
		return "now"
	}
	return (d + time.Second - 1).Truncate(time.Second).String()
}

func newQuotaChargeCmd(a *app) *cobra.Command {
	var (
		method string
		count  int
	)
	cmd := &cobra.Command{
		Use:   "charge --method METHOD [--count N]",
		Short: "Record usage made outside trendfetch (e.g. calls made by hand)",
		Long: `Reserve N calls of METHOD in the limiter without calling the API, so usage
made outside trendfetch (debugging with curl, another tool on the same Cloud
project) is counted. Stops at the first denial and exits 75.`,
		Example: "  trendfetch quota charge --method search.list --count 3",
		Args:    cobra.NoArgs,
		PreRunE: a.withConfig,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := a.checkCalls("trendfetch quota charge", method, int64(count)); err != nil {
				return err
			}
			n, err := a.engine().Charge(cmd.Context(), method, count)
			if errors.As(err, new(*fetch.StopError)) {
				fmt.Fprintf(a.stdout, "charged %d of %d %s calls\n", n, count, method)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "charged %d %s calls to credential %s\n", count, method, a.cfg.Credential)
			return nil
		},
	}
	cmd.Flags().StringVar(&method, "method", "", "API method, e.g. search.list (a key of quota.costs)")
	cmd.Flags().IntVar(&count, "count", 1, "number of calls to record")
	_ = cmd.MarkFlagRequired("method")
	return cmd
}

func newQuotaResetCmd(a *app) *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:     "reset --credential NAME --yes",
		Short:   "Forget every recorded call and exhaustion marker of a credential",
		Args:    cobra.NoArgs,
		PreRunE: a.withConfig,
		RunE: func(cmd *cobra.Command, _ []string) error {
			credential := *a.flags["credential"]
			if credential == "" {
				return usagef("trendfetch quota reset --credential default --yes", "reset needs --credential NAME")
			}
			if !yes {
				return usagef("trendfetch quota reset --credential "+credential+" --yes", "reset forgets all recorded usage of %s: confirm with --yes", credential)
			}
			lim, err := a.engine().OpenLimiter(false)
			if err != nil {
				return err
			}
			defer lim.Close()
			if err := lim.Reset(cmd.Context(), credential); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "quota of credential %s reset\n", credential)
			return nil
		},
	}
	cmd.Flags().BoolVar(&yes, "yes", false, "confirm")
	return cmd
}

// errWouldNotFit ends `quota check` when the calls fit later (exit 75);
// errNeverFits when they exceed a bucket's limit (exit 2).
var (
	errWouldNotFit = errors.New("the calls do not fit now")
	errNeverFits   = errors.New("the calls can never fit: they exceed a bucket's limit")
)

func newQuotaCheckCmd(a *app) *cobra.Command {
	var (
		method string
		count  int64
		asJSON bool
	)
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
			if err := a.checkCalls("trendfetch quota check", method, count); err != nil {
				return err
			}
			out, err := a.engine().Check(cmd.Context(), method, count)
			if err != nil {
				return err
			}
			if !asJSON {
				printCheck(a, out)
			} else if err := a.printJSON(out); err != nil {
				return err
			}
			switch {
			case out.Fits:
				return nil
			case out.FitsBy == nil:
				return &usageError{Err: errNeverFits}
			}
			return errWouldNotFit
		},
	}
	cmd.Flags().StringVar(&method, "method", "", "API method, e.g. search.list (a key of quota.costs)")
	cmd.Flags().Int64Var(&count, "count", 1, "number of calls")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the answer as JSON")
	_ = cmd.MarkFlagRequired("method")
	return cmd
}

// checkCalls refuses (exit 2) a --count below 1 and a method not in
// quota.costs, hinting cmdLine with the closest one.
func (a *app) checkCalls(cmdLine, method string, count int64) error {
	if count < 1 {
		return usagef(cmdLine+" --method videos.list --count 1", "--count %d: must be at least 1", count)
	}
	if _, ok := a.cfg.Quota.Costs[method]; ok {
		return nil
	}
	known := slices.Sorted(maps.Keys(a.cfg.Quota.Costs))
	return usagef(cmdLine+" --method "+cmp.Or(termtext.Closest(method, known), methodOf(method, known), known[0]),
		"--method %q: not in the cost table (quota.costs has %s)", termtext.Clip(method, 80), strings.Join(known, ", "))
}

// methodOf returns the shortest of known that is prefix and a dot
// ("search" -> search.list), or "".
func methodOf(prefix string, known []string) string {
	best := ""
	for _, k := range known {
		if strings.HasPrefix(k, prefix+".") && (best == "" || len(k) < len(best)) {
			best = k
		}
	}
	return best
}

func printCheck(a *app, out engine.CheckResult) {
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
		fmt.Fprintf(a.stdout, "%s %s now (credential %s: %s)\n", calls, fit, out.Credential, detail)
	case out.FitsBy == nil:
		fmt.Fprintf(a.stdout, "%s never %s (credential %s: %s)\n", calls, fit, out.Credential, detail)
	case out.FitsAt.Equal(*out.FitsBy):
		fmt.Fprintf(a.stdout, "%s %s at %s (credential %s: %s)\n", calls, fit, out.FitsAt.Format("2006-01-02 15:04:05 MST"), out.Credential, detail)
	default:
		fmt.Fprintf(a.stdout, "%s %s not before %s and by %s at the latest (credential %s: %s)\n", calls, fit,
			out.FitsAt.Format("2006-01-02 15:04:05 MST"), out.FitsBy.Format("2006-01-02 15:04:05 MST"), out.Credential, detail)
	}
}
