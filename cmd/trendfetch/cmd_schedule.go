package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/trendfetch/trendfetch/internal/config"
	"github.com/trendfetch/trendfetch/internal/engine"
)

// scheduleOptions is what `schedule` was asked (its flags) and what it runs with.
type scheduleOptions struct {
	engine                 *engine.Engine
	cfg                    *config.Config // the engine's: --serve overrides serve.addr
	lookupEnv              func(string) (string, bool)
	metricsAddr, serveAddr string // "" = off
}

// newScheduleCmd is `schedule`: its flags fill the options scheduleRun runs.
func newScheduleCmd(a *app) *cobra.Command {
	o := &scheduleOptions{}
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
			o.engine, o.cfg, o.lookupEnv = a.engine(), a.cfg, a.lookupEnv
			return scheduleRun(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.metricsAddr, "metrics-addr", "", `serve Prometheus /metrics and liveness /healthz on this host:port, e.g. 127.0.0.1:9464 ("" = off)`)
	cmd.Flags().StringVar(&o.serveAddr, "serve", "", `also serve trendfetch serve's API and dashboard (its rules), with these /metrics, on this host:port ("" = off)`)
	return cmd
}

// scheduleRun checks the plan and every key, listens, then runs the regions
// on their schedule until ctx ends.
func scheduleRun(ctx context.Context, o *scheduleOptions) error {
	if _, err := o.cfg.Schedule.Plan(o.cfg.Regions); err != nil {
		return err
	}
	// Every key must be readable now, not at a first tick hours later
	// (exit 2: systemd's RestartPreventExitStatus=2 stops retrying).
	for _, cr := range o.cfg.Credentials {
		if _, err := cr.APIKey(o.lookupEnv); err != nil {
			return err
		}
	}
	srv, err := o.listen()
	defer srv.close()
	if err != nil {
		return err
	}
	r, err := o.engine.OpenRunner(ctx)
	if err != nil {
		return err
	}
	defer r.Close()
	return r.Schedule(ctx, srv.Servers)
}

// listeners are the servers schedule listens on, closed together.
type listeners struct{ engine.Servers }

// close closes the listeners opened.
func (l listeners) close() {
	if l.Metrics != nil {
		l.Metrics.Close()
	}
	if l.API != nil {
		l.API.Close()
	}
}

// listen opens --metrics-addr and --serve (serve's rules: its token file and address checks).
func (o *scheduleOptions) listen() (listeners, error) {
	var l listeners
	var err error
	if o.metricsAddr != "" {
		if l.Metrics, err = engine.ListenMetrics(o.metricsAddr); err != nil {
			return l, err
		}
	}
	if o.serveAddr != "" {
		o.cfg.Serve.Addr = o.serveAddr
		l.API, l.Token, err = o.engine.ListenServe()
	}
	return l, err
}
