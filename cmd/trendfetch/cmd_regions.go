package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/trendfetch/trendfetch/internal/config"
	"github.com/trendfetch/trendfetch/internal/regions"
)

// regionOut is one line of `trendfetch regions --json`; the fields after
// Configured are set for configured regions only.
type regionOut struct {
	Code          string     `json:"code"`                     // the regionCode, e.g. "GB"
	Name          string     `json:"name"`                     // in English, e.g. "United Kingdom"
	Configured    bool       `json:"configured"`               // in the config's regions list
	Index         *int       `json:"index,omitempty"`          // its position in that list, from 0
	OffsetSeconds *float64   `json:"offset_seconds,omitempty"` // its stagger offset (0 for an explicit spec)
	Schedule      string     `json:"schedule,omitempty"`       // "every 2h0m0s +3m0s" or a cron spec
	NextRun       *time.Time `json:"next_run,omitempty"`       // when `trendfetch schedule` runs it next
}

// regionsOptions is what `regions` was asked and the configuration it lists.
type regionsOptions struct {
	io       ioStreams
	schedule config.Schedule
	regions  []string // the configured regions
	asJSON   bool
}

// newRegionsCmd is `regions`: its flags fill the options regionsRun runs.
func newRegionsCmd(a *app) *cobra.Command {
	o := &regionsOptions{}
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
			o.io, o.schedule, o.regions = a.ioStreams, a.cfg.Schedule, a.cfg.Regions
			return regionsRun(cmd.Context(), o)
		},
	}
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print JSON: [{code, name, configured, index, offset_seconds, schedule, next_run}]")
	return cmd
}

// regionsRun lists every supported region; the configured ones with their
// place in the schedule and next run after now.
func regionsRun(_ context.Context, o *regionsOptions) error {
	plan, err := o.schedule.Plan(o.regions)
	if err != nil {
		return err
	}
	all, now := regions.All(), time.Now()
	out := make([]regionOut, len(all))
	for i, code := range all {
		out[i] = regionOut{Code: code, Name: regions.Name(code)}
	}
	for _, p := range plan {
		if i := slices.Index(all, p.Region); i >= 0 {
			idx, off, next := p.Index, p.Offset.Seconds(), p.Schedule.Next(now)
			out[i].Configured, out[i].Index, out[i].OffsetSeconds, out[i].Schedule, out[i].NextRun = true, &idx, &off, p.Spec, &next
		}
	}
	if o.asJSON {
		return o.io.printJSON(out)
	}
	return printRegions(o.io, out, o.schedule.Location(), len(o.regions))
}

// printRegions writes the regions for people, next runs in loc (schedule.timezone).
func printRegions(s ioStreams, out []regionOut, loc *time.Location, configured int) error {
	tw := table(s.stdout, "CODE\tNAME\tCONFIGURED\tOFFSET\tNEXT RUN\tSCHEDULE")
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
	_, err := fmt.Fprintf(s.stdout, "%d of %d regions configured\n", configured, len(out))
	return err
}
