package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/trendfetch/trendfetch/internal/fetch"
	"github.com/trendfetch/trendfetch/internal/metrics"
	"github.com/trendfetch/trendfetch/internal/quota"
	"github.com/trendfetch/trendfetch/internal/schedule"
)

func newScheduleCmd(a *app) *cobra.Command {
	var metricsAddr string
	cmd := &cobra.Command{
		Use:   "schedule [--metrics-addr 127.0.0.1:9464]",
		Short: "Run every configured region on its schedule in one long-lived process",
		Long: `Run each configured region on its schedule (config key schedule: every or
cron, stagger, timezone, per-region specs, concurrency, grace), in one
process, with the same code path, limiter and run records as
'trendfetch run'. On start each region's next run time is logged.

A region never runs twice at once (a tick that finds its previous run still
going is skipped), and at most schedule.concurrency regions run together.
A quota denial ends that run cleanly (one warning with Retry-After); the
region runs again at its next tick.

SIGTERM or SIGINT: no new run starts, running ones get schedule.grace
(default 30s) to finish, then are cancelled and recorded as interrupted;
the exit code is 0. A second signal exits at once. A rejected API key stops
the scheduler with exit 2.

--metrics-addr serves Prometheus metrics on /metrics and a liveness check
on /healthz.`,
		Example: "  trendfetch schedule\n  trendfetch --config /etc/trendfetch.yaml schedule --metrics-addr 127.0.0.1:9464",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := a.loadConfig(); err != nil {
				return err
			}
			return a.schedule(cmd.Context(), metricsAddr)
		},
	}
	cmd.Flags().StringVar(&metricsAddr, "metrics-addr", "", `serve /metrics and /healthz on this host:port, e.g. 127.0.0.1:9464 ("" = off)`)
	return cmd
}

// schedule runs the scheduler until ctx is cancelled (a signal): nil after
// a clean stop, a *fetch.CredentialError when the API rejects the key, or
// an error opening the engine or the metrics listener.
func (a *app) schedule(ctx context.Context, metricsAddr string) error {
	plan, err := a.cfg.Schedule.Plan(a.cfg.Regions)
	if err != nil {
		return err
	}
	var ln net.Listener
	if metricsAddr != "" {
		if _, _, err := net.SplitHostPort(metricsAddr); err != nil {
			return usagef("trendfetch schedule --metrics-addr 127.0.0.1:9464", "--metrics-addr %q: %v", metricsAddr, err)
		}
		if ln, err = net.Listen("tcp", metricsAddr); err != nil {
			return fmt.Errorf("cannot serve metrics: %w", err)
		}
		defer ln.Close()
	}
	e, err := a.openEngine(ctx)
	if err != nil {
		return err
	}
	defer e.Close()

	if ln != nil {
		creds := make([]string, len(a.cfg.Credentials))
		for i, c := range a.cfg.Credentials {
			creds[i] = c.Name
		}
		m := metrics.New(e.limiter, creds, a.cfg.Regions, 0)
		e.runner.OnCall, e.runner.OnRun = m.ObserveCall, m.ObserveRun
		srv := &http.Server{Handler: m.Handler(), ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				a.log.Error().Err(err).Msg("metrics server stopped")
			}
		}()
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			srv.Shutdown(sctx)
		}()
		a.log.Info().Str("addr", ln.Addr().String()).Msg("serving /metrics and /healthz")
	}

	jobs := make([]schedule.Job, len(plan))
	for i, p := range plan {
		region := p.Region
		jobs[i] = schedule.Job{Name: region, Schedule: p.Schedule, Run: func(ctx context.Context) error {
			// Each job gets its own copy of the runner, so the channels it
			// keeps for a full batch are not shared by concurrent regions.
			// The code path is the same as `trendfetch run`'s.
			r := *e.runner
			run, err := r.Run(ctx, region)
			var (
				stop *fetch.StopError
				held *quota.LeaseHeldError
			)
			switch {
			case err == nil || run.ID != 0 || ctx.Err() != nil || errors.As(err, &stop):
				// The runner logged the run (once, at warn level for a denial).
			case errors.As(err, &held):
				// Another process (a cron line, another host) runs the region.
				a.log.Warn().Err(err).Str("region", region).Msg("region is running elsewhere: tick skipped")
			default:
				a.log.Error().Err(err).Str("region", region).Msg("run not started")
			}
			return err
		}}
	}
	s, err := schedule.New(jobs, schedule.Options{
		Concurrency: a.cfg.Schedule.Concurrency,
		Grace:       a.cfg.Schedule.Grace.Std(),
		Log:         a.log,
		Fatal: func(err error) bool {
			var ce *fetch.CredentialError
			return errors.As(err, &ce)
		},
	})
	if err != nil {
		return err
	}
	a.log.Info().Strs("regions", a.cfg.Regions).Int("concurrency", a.cfg.Schedule.Concurrency).
		Dur("grace", a.cfg.Schedule.Grace.Std()).Msg("scheduler starting")
	return s.Run(ctx)
}
