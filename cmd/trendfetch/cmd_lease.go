package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/trendfetch/trendfetch/internal/engine"
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

// leaseOptions is what `lease list` or `lease release` was asked (its flags) and where it writes.
type leaseOptions struct {
	io          ioStreams
	engine      *engine.Engine
	credential  string // the configured credential, named in release's lines
	region      string
	yes, asJSON bool
}

func newLeaseListCmd(a *app) *cobra.Command {
	o := &leaseOptions{}
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List the held region leases of every configured credential",
		Args:    cobra.NoArgs,
		PreRunE: a.withConfig,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.io, o.engine = a.ioStreams, a.engine()
			return leaseListRun(cmd.Context(), o)
		},
	}
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print the leases as JSON")
	return cmd
}

// leaseListRun prints the held leases, as JSON or a table.
func leaseListRun(ctx context.Context, o *leaseOptions) error {
	all, err := o.engine.Leases(ctx)
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	if o.asJSON {
		out := []leaseJSON{}
		for _, l := range all {
			out = append(out, leaseJSON{Credential: l.Credential, Region: l.Region, Holder: l.Holder,
				ExpiresInMs: (l.Remaining + time.Millisecond - 1).Milliseconds(), ExpiresAt: now.Add(l.Remaining).Truncate(time.Millisecond)})
		}
		return o.io.printJSON(out)
	}
	if len(all) == 0 {
		fmt.Fprintln(o.io.stdout, "no region leases held")
		return nil
	}
	tw := table(o.io.stdout, "CREDENTIAL\tREGION\tHOLDER\tEXPIRES (UTC)")
	for _, l := range all {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s (in %s)\n", l.Credential, l.Region, termtext.Safe(l.Holder),
			now.Add(l.Remaining).Format(utcSecond), l.Remaining.Round(time.Second))
	}
	return tw.Flush()
}

func newLeaseReleaseCmd(a *app) *cobra.Command {
	o := &leaseOptions{}
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
			o.io, o.engine, o.credential = a.ioStreams, a.engine(), a.cfg.Credential // Validate checked it names a credential
			return leaseReleaseRun(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVarP(&o.region, "region", "r", "", "region code whose lease to release")
	cmd.Flags().BoolVar(&o.yes, "yes", false, "confirm the release")
	return cmd
}

// leaseReleaseRun releases o.region's lease when o.yes, and says what became of it.
func leaseReleaseRun(ctx context.Context, o *leaseOptions) error {
	if o.region == "" {
		return usagef("trendfetch lease release --region US --yes", "lease release needs --region CODE")
	}
	code, err := regions.Parse(o.region)
	if err != nil {
		return err
	}
	l, held, err := o.engine.ReleaseLease(ctx, code, o.yes)
	switch {
	case err != nil:
		return err
	case !held:
		fmt.Fprintf(o.io.stdout, "region %s of credential %s: no lease held\n", code, o.credential)
	case !o.yes:
		return usagef(fmt.Sprintf("trendfetch lease release --region %s --credential %s --yes", code, o.credential),
			"region %s of credential %q is held by %s: add --yes to release it", code, o.credential, termtext.Safe(l.Holder))
	default:
		fmt.Fprintf(o.io.stdout, "released region %s of credential %s (held by %s)\n", code, o.credential, termtext.Safe(l.Holder))
	}
	return nil
}
