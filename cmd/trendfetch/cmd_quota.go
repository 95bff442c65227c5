package main

import (
	"cmp"
	"context"
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

// quotaStatusOptions is what `quota status` was asked and where it writes.
type quotaStatusOptions struct {
	io                 ioStreams
	engine             *engine.Engine
	credential, preset string // the credential whose buckets to show; quota.preset
	asJSON             bool
}

// newQuotaStatusCmd is `quota status`: its flags fill the options quotaStatusRun runs.
func newQuotaStatusCmd(a *app) *cobra.Command {
	o := &quotaStatusOptions{}
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
			o.io, o.engine, o.credential, o.preset = a.ioStreams, a.engine(), a.cfg.Credential, a.cfg.Quota.Preset
			return quotaStatusRun(cmd.Context(), o)
		},
	}
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print the status as JSON")
	return cmd
}

// quotaStatusRun prints the credential's status, then the storage policy's note (as `runs`).
func quotaStatusRun(ctx context.Context, o *quotaStatusOptions) error {
	st, err := o.engine.QuotaStatus(ctx, o.credential)
	if err != nil {
		return err
	}
	if o.asJSON {
		v := st.View()
		v.Preset = o.preset
		if err := o.io.printJSON(v); err != nil {
			return err
		}
	} else if !errors.As(st.Err, new(*quota.AccessError)) {
		printStatus(o.io, o.preset, st)
	}
	if db, err := o.engine.OpenStore(ctx, true); err == nil { // best effort
		policyNotice(ctx, o.engine, o.io, db)
		db.Close()
	}
	return engine.StatusError(st)
}

// printStatus writes st for people: the backend, the upstream marks (Google's
// words made safe for a terminal), then a table of the buckets.
func printStatus(s ioStreams, preset string, st quota.Status) {
	reach := fmt.Sprintf("reachable, %s", st.Latency.Round(10*time.Microsecond))
	if !st.Reachable {
		reach = "UNREACHABLE: " + termtext.Safe(st.Err.Error())
	}
	fmt.Fprintf(s.stdout, "credential %s · backend %s (%s) · preset %s\n", st.Credential, st.Backend, reach, preset)
	if !st.Reachable {
		return
	}
	for _, m := range st.Marks {
		what := "the credential (every call site)"
		if m.Site != "" {
			what = m.Site + " (its own Google quota; the other call sites go on)"
		}
		fmt.Fprintf(s.stdout, "SPENT upstream until %s: %s; the API answered %s\n", m.Until.UTC().Format(time.RFC3339), what, termtext.Safe(m.Why))
	}
	tw := table(s.stdout, "BUCKET\tUSED\t\tLEFT\tWINDOW\tTODAY (PT)\t1 UNIT IN\tMAX COST IN")
	for _, b := range st.Buckets {
		window := b.Window.String()
		if b.Calendar {
			window = "Pacific day"
		}
		name := b.Name
		if b.Shadow {
			name += " (shadow)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%d\t%s\t%d\t%s\t%s\n", name, termtext.Bar(b.Used, b.Limit, 20), b.Used, b.Limit,
			b.Remaining, window, b.UsedToday, wait(b.RetryAfterOne), fmt.Sprintf("%s (%d)", wait(b.RetryAfterMax), b.MaxCost))
	}
	tw.Flush()
	printShadowDenials(s, st)
	printHeld(s, st)
	if !st.Now.IsZero() {
		next := quota.NextPacificMidnight(st.Now)
		fmt.Fprintf(s.stdout, "Google's quota day resets at %s (in %s)\n", next.UTC().Format("2006-01-02 15:04 MST"), next.Sub(st.Now).Round(time.Minute))
	}
}

// printShadowDenials writes, per shadow bucket, the calls it would have denied today by call site.
func printShadowDenials(s ioStreams, st quota.Status) {
	for _, b := range st.Buckets {
		if !b.Shadow {
			continue
		}
		var per []string
		for _, site := range slices.Sorted(maps.Keys(b.ShadowDenials)) {
			per = append(per, fmt.Sprintf("%s %d", cmp.Or(site, "(no call site)"), b.ShadowDenials[site]))
		}
		fmt.Fprintf(s.stdout, "shadow bucket %s would have denied today: %s\n", b.Name, cmp.Or(strings.Join(per, ", "), "none"))
	}
}

// printHeld writes, per bucket with outage reserves, the units each host's reserve holds.
func printHeld(s ioStreams, st quota.Status) {
	for _, b := range st.Buckets {
		var per []string
		for _, id := range slices.Sorted(maps.Keys(b.Held)) {
			per = append(per, fmt.Sprintf("%s %d", termtext.Safe(id), b.Held[id]))
		}
		if len(per) > 0 {
			fmt.Fprintf(s.stdout, "outage reserves held in %s (counted out of LEFT): %s\n", b.Name, strings.Join(per, ", "))
		}
	}
}

func wait(d time.Duration) string {
	if d <= 0 {
		return "now"
	}
	return (d + time.Second - 1).Truncate(time.Second).String()
}

func newQuotaChargeCmd(a *app) *cobra.Command {
	o, count := &quotaOptions{}, 0
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
			o.io, o.engine, o.cfg, o.count = a.ioStreams, a.engine(), a.cfg, int64(count)
			return quotaChargeRun(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.method, "method", "", "API method, e.g. search.list (a key of quota.costs)")
	cmd.Flags().IntVar(&count, "count", 1, "number of calls to record")
	_ = cmd.MarkFlagRequired("method")
	return cmd
}

// quotaChargeRun reserves the calls, stopping at the first denial (exit 75), and says how many.
func quotaChargeRun(ctx context.Context, o *quotaOptions) error {
	if err := o.checkCalls("trendfetch quota charge"); err != nil {
		return err
	}
	n, err := o.engine.Charge(ctx, o.method, int(o.count))
	if errors.As(err, new(*fetch.StopError)) {
		fmt.Fprintf(o.io.stdout, "charged %d of %d %s calls\n", n, o.count, o.method)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(o.io.stdout, "charged %d %s calls to credential %s\n", o.count, o.method, o.cfg.Credential)
	return nil
}

func newQuotaResetCmd(a *app) *cobra.Command {
	o := &quotaOptions{}
	cmd := &cobra.Command{
		Use:     "reset --credential NAME --yes",
		Short:   "Forget every recorded call and exhaustion marker of a credential",
		Args:    cobra.NoArgs,
		PreRunE: a.withConfig,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.io, o.engine, o.credential = a.ioStreams, a.engine(), *a.flags["credential"]
			return quotaResetRun(cmd.Context(), o)
		},
	}
	cmd.Flags().BoolVar(&o.yes, "yes", false, "confirm")
	return cmd
}

// quotaResetRun forgets the recorded usage of o.credential (the root
// flag's: never the default by accident), confirmed by --yes.
func quotaResetRun(ctx context.Context, o *quotaOptions) error {
	if o.credential == "" {
		return usagef("trendfetch quota reset --credential default --yes", "reset needs --credential NAME")
	}
	if !o.yes {
		return usagef("trendfetch quota reset --credential "+o.credential+" --yes", "reset forgets all recorded usage of %s: confirm with --yes", o.credential)
	}
	lim, err := o.engine.OpenLimiter(false)
	if err != nil {
		return err
	}
	defer lim.Close()
	if err := lim.Reset(ctx, o.credential); err != nil {
		return err
	}
	fmt.Fprintf(o.io.stdout, "quota of credential %s reset\n", o.credential)
	return nil
}
