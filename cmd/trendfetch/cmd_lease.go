package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/trendfetch/trendfetch/internal/regions"
	"github.com/trendfetch/trendfetch/internal/termtext"
)

func newLeaseCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lease",
		Short: "List and release region run leases",
		Long: `A run holds its region's lease in the quota backend so that two runs of one
region never overlap. A lease whose holder is a process of this host that no
longer exists is taken over by the next run at once; a holder on another
host keeps the region until its lease expires (runs.lease_ttl) unless it is
released here.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usagef("trendfetch lease list", "lease needs a subcommand: list or release")
		},
	}
	cmd.AddCommand(newLeaseListCmd(a), newLeaseReleaseCmd(a))
	return cmd
}

// leaseJSON is one lease of `lease list --json`.
type leaseJSON struct {
	Credential  string    `json:"credential"`
	Region      string    `json:"region"`
	Holder      string    `json:"holder"`
	ExpiresInMs int64     `json:"expires_in_ms"`
	ExpiresAt   time.Time `json:"expires_at"`
}

func newLeaseListCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List the held region leases of every configured credential",
		Args:    cobra.NoArgs,
		PreRunE: a.withConfig,
		RunE: func(cmd *cobra.Command, _ []string) error {
			all, err := a.engine().Leases(cmd.Context())
			if err != nil {
				return err
			}
			now := time.Now().UTC()
			if asJSON {
				out := []leaseJSON{}
				for _, l := range all {
					out = append(out, leaseJSON{Credential: l.Credential, Region: l.Region, Holder: l.Holder,
						ExpiresInMs: (l.Remaining + time.Millisecond - 1).Milliseconds(), ExpiresAt: now.Add(l.Remaining).Truncate(time.Millisecond)})
				}
				return a.printJSON(out)
			}
			if len(all) == 0 {
				fmt.Fprintln(a.stdout, "no region leases held")
				return nil
			}
			tw := table(a.stdout, "CREDENTIAL\tREGION\tHOLDER\tEXPIRES (UTC)")
			for _, l := range all {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s (in %s)\n", l.Credential, l.Region, termtext.Safe(l.Holder),
					now.Add(l.Remaining).Format("2006-01-02 15:04:05"), l.Remaining.Round(time.Second))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the leases as JSON")
	return cmd
}

func newLeaseReleaseCmd(a *app) *cobra.Command {
	var (
		region string
		yes    bool
	)
	cmd := &cobra.Command{
		Use:   "release --region CODE [--credential NAME] --yes",
		Short: "Release a region's lease held by a process that is gone",
		Long: `Release the run lease of a region whatever its holder, so the next run starts
at once. Use it for a holder on another host that is known to be gone; a live
holder loses the region at its next renewal and stops.`,
		Example: "  trendfetch lease release --region US --yes",
		Args:    cobra.NoArgs,
		PreRunE: a.withConfig,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if region == "" {
				return usagef("trendfetch lease release --region US --yes", "lease release needs --region CODE")
			}
			code, err := regions.Parse(region)
			if err != nil {
				return err
			}
			cred := a.cfg.Credential // Validate checked it names a credential
			l, held, err := a.engine().ReleaseLease(cmd.Context(), code, yes)
			switch {
			case err != nil:
				return err
			case !held:
				fmt.Fprintf(a.stdout, "region %s of credential %s: no lease held\n", code, cred)
			case !yes:
				return usagef(fmt.Sprintf("trendfetch lease release --region %s --credential %s --yes", code, cred),
					"region %s of credential %q is held by %s: add --yes to release it", code, cred, termtext.Safe(l.Holder))
			default:
				fmt.Fprintf(a.stdout, "released region %s of credential %s (held by %s)\n", code, cred, termtext.Safe(l.Holder))
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&region, "region", "r", "", "region code whose lease to release")
	cmd.Flags().BoolVar(&yes, "yes", false, "confirm the release")
	return cmd
}
