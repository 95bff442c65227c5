package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/trendfetch/trendfetch/internal/config"
	"github.com/trendfetch/trendfetch/internal/regions"
)

// regionOut is one line of `trendfetch regions --json`.
type regionOut struct {
	// Code is the regionCode, e.g. "GB".
	Code string `json:"code"`
	// Name is the English name, e.g. "United Kingdom".
	Name string `json:"name"`
	// Configured reports that the region is in the config's regions list.
	Configured bool `json:"configured"`
	// The fields below are set for configured regions only.
	// Index is the position in the regions list, from 0.
	Index *int `json:"index,omitempty"`
	// OffsetSeconds is the stagger offset in seconds (0 for an explicit spec).
	OffsetSeconds *float64 `json:"offset_seconds,omitempty"`
	// Schedule describes the schedule, e.g. "every 2h0m0s +3m0s" or a cron spec.
	Schedule string `json:"schedule,omitempty"`
	// NextRun is when `trendfetch schedule` runs the region next (RFC 3339).
	NextRun *time.Time `json:"next_run,omitempty"`
}

func newRegionsCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "regions [--json]",
		Short: "List supported region codes, marking the configured ones with their schedule",
		Long: `List every region code the YouTube Data API supports (regionCode) with its
English name. Configured regions (config key regions) are marked with their
stagger offset and the next time 'trendfetch schedule' runs them.`,
		Example: "  trendfetch regions\n  trendfetch regions --json",
		Args:    cobra.NoArgs,
		PreRunE: a.withConfig,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out, err := regionList(a.cfg, time.Now())
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(out)
			}
			loc := a.cfg.Schedule.Location()
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "CODE\tNAME\tCONFIGURED\tOFFSET\tNEXT RUN\tSCHEDULE")
			for _, r := range out {
				if !r.Configured {
					fmt.Fprintf(tw, "%s\t%s\t\t\t\t\n", r.Code, r.Name)
					continue
				}
				fmt.Fprintf(tw, "%s\t%s\tyes\t%s\t%s\t%s\n", r.Code, r.Name,
					time.Duration(*r.OffsetSeconds*float64(time.Second)), r.NextRun.In(loc).Format("2006-01-02 15:04:05 MST"), r.Schedule)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			_, err = fmt.Fprintf(a.stdout, "%d of %d regions configured\n", len(a.cfg.Regions), len(out))
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON: [{code, name, configured, index, offset_seconds, schedule, next_run}]")
	return cmd
}

// regionList returns every supported region, configured ones with their
// place in cfg's schedule and next run after now.
func regionList(cfg *config.Config, now time.Time) ([]regionOut, error) {
	plan, err := cfg.Schedule.Plan(cfg.Regions)
	if err != nil {
		return nil, err
	}
	byCode := map[string]config.RegionPlan{}
	for _, p := range plan {
		byCode[p.Region] = p
	}
	all := regions.All()
	out := make([]regionOut, len(all))
	for i, code := range all {
		r := regionOut{Code: code, Name: regions.Name(code)}
		if p, ok := byCode[code]; ok {
			idx, off, next := p.Index, p.Offset.Seconds(), p.Schedule.Next(now)
			r.Configured, r.Index, r.OffsetSeconds, r.Schedule, r.NextRun = true, &idx, &off, p.Spec, &next
		}
		out[i] = r
	}
	return out, nil
}
