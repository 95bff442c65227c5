package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/trendfetch/trendfetch/internal/config"
	"github.com/trendfetch/trendfetch/internal/engine"
	"github.com/trendfetch/trendfetch/internal/regions"
	"github.com/trendfetch/trendfetch/internal/termtext"
)

// runOptions is what `run` was asked (its flags) and what it runs with.
type runOptions struct {
	engine                *engine.Engine
	cfg                   *config.Config // the engine's: --metrics-textfile overrides runs.metrics_textfile
	regions               []string
	all, force, textfiles bool // textfiles: --metrics-textfile given
	textfileDir           string
}

func newRunCmd(a *app) *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run (--region CODE ... | --all)",
		Short: "Ingest the trending chart of one or more regions",
		Long: `Ingest chart=mostPopular for each region, one run per region, in order.
Every page is reserved from the quota limiter before it is sent. A quota
denial stops cleanly (no sleeping): the run is recorded with its Retry-After
and trendfetch exits 75; the next cron tick resumes. A region that another
host captured in the current slot of its schedule is not fetched again
(exit 0) unless --force. Exit codes: trendfetch --help.`,
		Example: "  trendfetch run --region US\n  trendfetch run --region US --region GB\n  trendfetch run --all",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			if code, err := regions.Parse(args[0]); err == nil {
				return usagef("trendfetch run --region "+code, "run takes regions as --region %s, not as an argument", code)
			}
			return usagef("trendfetch run --region US", "run takes no arguments (got %q): regions are given as --region CODE", termtext.Clip(args[0], 80))
		},
		PreRunE: a.withConfig,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.engine, o.cfg, o.textfiles = a.engine(), a.cfg, cmd.Flags().Changed("metrics-textfile")
			return runRegions(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.textfileDir, "metrics-textfile", "", "write each region's metrics to DIR/trendfetch_REGION.prom for node_exporter's textfile collector (default: runs.metrics_textfile)")
	cmd.Flags().StringSliceVarP(&o.regions, "region", "r", nil, "region code (regionCode), repeatable or comma-separated, e.g. US,GB")
	cmd.Flags().BoolVar(&o.all, "all", false, "every region in the config's regions list")
	cmd.Flags().BoolVar(&o.force, "force", false, "fetch even a region another host captured in the current slot of its schedule")
	return cmd
}

// runRegions runs the regions of --region, or with --all the configured ones, in order.
func runRegions(ctx context.Context, o *runOptions) error {
	if len(o.regions) == 0 && !o.all {
		return usagef("trendfetch run --region US", "run needs --region CODE or --all")
	}
	if len(o.regions) > 0 && o.all {
		return usagef("trendfetch run --help", "--region and --all exclude each other")
	}
	list, err := regions.ParseList(o.regions)
	if o.all {
		list, err = o.cfg.Regions, nil
	}
	if err != nil {
		return err
	}
	if o.textfiles {
		o.cfg.Runs.MetricsTextfile = o.textfileDir
	}
	return o.engine.Run(ctx, list, o.force)
}

// engine returns the application layer of the loaded configuration.
func (a *app) engine() *engine.Engine {
	return engine.New(engine.Options{Config: a.cfg, Log: a.log, LookupEnv: a.lookupEnv, Secrets: a.secrets,
		Notes: a.stderr, Version: version})
}
