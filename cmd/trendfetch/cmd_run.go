package main

import (
	"github.com/spf13/cobra"

	"github.com/trendfetch/trendfetch/internal/engine"
	"github.com/trendfetch/trendfetch/internal/regions"
	"github.com/trendfetch/trendfetch/internal/termtext"
)

func newRunCmd(a *app) *cobra.Command {
	var (
		regionFlags []string
		all, force  bool
		textfileDir string
	)
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
			if len(regionFlags) == 0 && !all {
				return usagef("trendfetch run --region US", "run needs --region CODE or --all")
			}
			if len(regionFlags) > 0 && all {
				return usagef("trendfetch run --help", "--region and --all exclude each other")
			}
			list, err := regions.ParseList(regionFlags)
			if all {
				list, err = a.cfg.Regions, nil
			}
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("metrics-textfile") {
				a.cfg.Runs.MetricsTextfile = textfileDir
			}
			return a.engine().Run(cmd.Context(), list, force)
		},
	}
	cmd.Flags().StringVar(&textfileDir, "metrics-textfile", "", "write each region's metrics to DIR/trendfetch_REGION.prom for node_exporter's textfile collector (default: runs.metrics_textfile)")
	cmd.Flags().StringSliceVarP(&regionFlags, "region", "r", nil, "region code (regionCode), repeatable or comma-separated, e.g. US,GB")
	cmd.Flags().BoolVar(&all, "all", false, "every region in the config's regions list")
	cmd.Flags().BoolVar(&force, "force", false, "fetch even a region another host captured in the current slot of its schedule")
	return cmd
}

// engine returns the application layer of the loaded configuration.
func (a *app) engine() *engine.Engine {
	return engine.New(engine.Options{Config: a.cfg, Log: a.log, LookupEnv: a.lookupEnv, Secrets: a.secrets,
		Notes: a.stderr, Version: version})
}
