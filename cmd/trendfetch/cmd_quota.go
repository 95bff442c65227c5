package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/trendfetch/trendfetch/internal/fetch"
	"github.com/trendfetch/trendfetch/internal/quota"
)

func newQuotaCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "quota",
		Short: "Inspect and manage the shared quota limiter",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usagef("trendfetch quota status", "quota needs a subcommand: status, charge or reset")
		},
	}
	cmd.AddCommand(newQuotaStatusCmd(a), newQuotaChargeCmd(a), newQuotaResetCmd(a))
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
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := a.loadConfig(); err != nil {
				return err
			}
			lim, err := openLimiter(a.cfg, a.log)
			if err != nil {
				return err
			}
			defer lim.Close()
			st := lim.Status(cmd.Context(), a.cfg.Credential)
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(statusJSON(st)); err != nil {
					return err
				}
			} else {
				printStatus(a, st)
			}
			if !st.Reachable {
				return fmt.Errorf("quota backend %s unreachable: %s", st.Backend, st.Err)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	return cmd
}

type bucketJSON struct {
	Name            string    `json:"name"`
	Limit           int64     `json:"limit"`
	WindowSeconds   float64   `json:"window_seconds"`
	Calendar        bool      `json:"calendar"`
	Used            int64     `json:"used"`
	Remaining       int64     `json:"remaining"`
	Entries         int64     `json:"entries"`
	Oldest          time.Time `json:"oldest,omitzero"`
	RetryAfterOneMs int64     `json:"retry_after_one_ms"`
	MaxCost         int64     `json:"max_cost"`
	RetryAfterMaxMs int64     `json:"retry_after_max_ms"`
	UsedToday       int64     `json:"used_today"`
}

type statusOut struct {
	Credential     string       `json:"credential"`
	Backend        string       `json:"backend"`
	Reachable      bool         `json:"reachable"`
	Error          string       `json:"error,omitempty"`
	LatencyMs      float64      `json:"latency_ms"`
	Now            time.Time    `json:"now,omitzero"`
	DayStart       time.Time    `json:"pacific_day_start,omitzero"`
	ExhaustedUntil time.Time    `json:"exhausted_until,omitzero"`
	Buckets        []bucketJSON `json:"buckets"`
}

func statusJSON(st quota.Status) statusOut {
	out := statusOut{Credential: st.Credential, Backend: st.Backend, Reachable: st.Reachable, Error: st.Err,
		LatencyMs: float64(st.Latency.Microseconds()) / 1000, Now: st.Now, ExhaustedUntil: st.ExhaustedUntil,
		Buckets: []bucketJSON{}}
	if !st.Now.IsZero() {
		out.DayStart = quota.PacificMidnight(st.Now)
	}
	for _, b := range st.Buckets {
		out.Buckets = append(out.Buckets, bucketJSON{Name: b.Name, Limit: b.Limit, WindowSeconds: b.Window.Seconds(),
			Calendar: b.Calendar, Used: b.Used, Remaining: b.Remaining, Entries: b.Entries, Oldest: b.Oldest,
			RetryAfterOneMs: ceilMs(b.RetryAfterOne), MaxCost: b.MaxCost, RetryAfterMaxMs: ceilMs(b.RetryAfterMax),
			UsedToday: b.UsedToday})
	}
	return out
}

func ceilMs(d time.Duration) int64 { return int64((d + time.Millisecond - 1) / time.Millisecond) }

func printStatus(a *app, st quota.Status) {
	reach := fmt.Sprintf("reachable, %s", st.Latency.Round(10*time.Microsecond))
	if !st.Reachable {
		reach = "UNREACHABLE: " + st.Err
	}
	fmt.Fprintf(a.stdout, "credential %s · backend %s (%s)\n", st.Credential, st.Backend, reach)
	if !st.Reachable {
		return
	}
	if !st.ExhaustedUntil.IsZero() {
		fmt.Fprintf(a.stdout, "EXHAUSTED upstream (403 quotaExceeded) until %s\n", st.ExhaustedUntil.Local().Format(time.RFC3339))
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BUCKET\tUSED\t\tLEFT\tWINDOW\tTODAY (PT)\t1 UNIT IN\tMAX COST IN")
	for _, b := range st.Buckets {
		window := b.Window.String()
		if b.Calendar {
			window = "Pacific day"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%d\t%s\t%d\t%s\t%s\n", b.Name, bar(b.Used, b.Limit, 20), b.Used, b.Limit,
			b.Remaining, window, b.UsedToday, wait(b.RetryAfterOne), fmt.Sprintf("%s (%d)", wait(b.RetryAfterMax), b.MaxCost))
	}
	tw.Flush()
	if !st.Now.IsZero() {
		next := quota.NextPacificMidnight(st.Now)
		fmt.Fprintf(a.stdout, "Google's quota day resets at %s (in %s)\n", next.Local().Format("2006-01-02 15:04 MST"), next.Sub(st.Now).Round(time.Minute))
	}
}

func wait(d time.Duration) string {
	if d <= 0 {
		return "now"
	}
	return (d + time.Second - 1).Truncate(time.Second).String()
}

// bar draws used/limit as a fixed-width bar of # and . characters.
func bar(used, limit int64, width int) string {
	n := 0
	if limit > 0 {
		n = int(min(used, limit) * int64(width) / limit)
	}
	if used > 0 && n == 0 {
		n = 1
	}
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", width-n) + "]"
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
		RunE: func(cmd *cobra.Command, _ []string) error {
			if count < 1 {
				return usagef("trendfetch quota charge --method videos.list --count 1", "--count %d: must be at least 1", count)
			}
			if err := a.loadConfig(); err != nil {
				return err
			}
			if _, ok := a.cfg.Quota.Costs[method]; !ok {
				return usagef("trendfetch quota status", "--method %q: not in the cost table (quota.costs)", method)
			}
			lim, err := openLimiter(a.cfg, a.log)
			if err != nil {
				return err
			}
			defer lim.Close()
			for i := 0; i < count; i++ {
				d, err := lim.Reserve(cmd.Context(), a.cfg.Credential, method)
				if err != nil {
					return fmt.Errorf("charged %d of %d calls: %w", i, count, err)
				}
				if !d.Allowed {
					fmt.Fprintf(a.stdout, "charged %d of %d %s calls\n", i, count, method)
					return fetch.Denied("", method, d)
				}
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
		Use:   "reset --credential NAME --yes",
		Short: "Forget every recorded call and exhaustion marker of a credential",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			credential := a.credential
			if credential == "" {
				return usagef("trendfetch quota reset --credential default --yes", "reset needs --credential NAME")
			}
			if !yes {
				return usagef("trendfetch quota reset --credential "+credential+" --yes", "reset forgets all recorded usage of %s: confirm with --yes", credential)
			}
			if err := a.loadConfig(); err != nil {
				return err
			}
			lim, err := openLimiter(a.cfg, a.log)
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
