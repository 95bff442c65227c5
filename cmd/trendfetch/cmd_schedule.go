package main

import (
	"github.com/spf13/cobra"

	"github.com/trendfetch/trendfetch/internal/engine"
)

func newScheduleCmd(a *app) *cobra.Command {
	var metricsAddr, serveAddr string
	cmd := &cobra.Command{
		Use:   "schedule [--metrics-addr 127.0.0.1:9464]",
		Short: "Run every configured region on its schedule in one long-lived process",
		Long: `Run each configured region on its schedule (config key schedule: every or cron,
stagger, timezone, per-region specs, concurrency, grace) in one process, with
the code path, limiter and run records of 'trendfetch run'; each region's next
run time is logged on start. A region never runs twice at once (a tick finding
its previous run still going is skipped); at most schedule.concurrency regions
run together. A quota denial ends that run cleanly (one warning with
Retry-After); the region runs again at its next tick.

SIGTERM or SIGINT: no new run starts, running ones get schedule.grace (default
30s) to finish, then are cancelled and recorded as interrupted; exit 0. A
second signal exits at once. A rejected API key stops the scheduler (exit 2).`,
		Example: "  trendfetch schedule\n  trendfetch --config /etc/trendfetch/trendfetch.yaml schedule --metrics-addr 127.0.0.1:9464",
		Args:    cobra.NoArgs,
		PreRunE: a.withConfig,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := a.cfg.Schedule.Plan(a.cfg.Regions); err != nil {
				return err
			}
			// Every key must be readable now, not at a first tick hours later
			// (exit 2: systemd's RestartPreventExitStatus=2 stops retrying).
			for _, cr := range a.cfg.Credentials {
				if _, err := cr.APIKey(a.lookupEnv); err != nil {
					return err
				}
			}
			var srv engine.Servers
			if metricsAddr != "" {
				ln, err := engine.ListenMetrics(metricsAddr)
				if err != nil {
					return err
				}
				defer ln.Close()
				srv.Metrics = ln
			}
			if serveAddr != "" {
				a.cfg.Serve.Addr = serveAddr
				ln, token, err := a.engine().ListenServe()
				if err != nil {
					return err
				}
				defer ln.Close()
				srv.API, srv.Token = ln, token
			}
			r, err := a.engine().OpenRunner(cmd.Context())
			if err != nil {
				return err
			}
			defer r.Close()
			return r.Schedule(cmd.Context(), srv)
		},
	}
	cmd.Flags().StringVar(&metricsAddr, "metrics-addr", "", `serve Prometheus /metrics and liveness /healthz on this host:port, e.g. 127.0.0.1:9464 ("" = off)`)
	cmd.Flags().StringVar(&serveAddr, "serve", "", `also serve trendfetch serve's API and dashboard (its rules), with these /metrics, on this host:port ("" = off)`)
	return cmd
}
