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

func newServeCmd(a *app) *cobra.Command {
	var addr, tokenFile string
	cmd := &cobra.Command{
		Use:   "serve [--addr ADDR] [--token-file FILE]",
		Short: "Serve the read API (/v1/...) and the dashboard (/) from the local database",
		Long: `Serve a read-only JSON API and an operator dashboard (/) over the local
database: /v1/search, /v1/charts/{region}, /v1/videos/{id}, /v1/runs,
/v1/quota, /v1/regions, /v1/dashboard, /v1/openapi.yaml, /healthz, /metrics.
Nothing served spends YouTube API quota or writes the database (quota.db is
only read). A non-loopback --addr requires --token-file (clients send
Authorization: Bearer <token>; the dashboard takes it as /#token=...). /v1/ is
rate-limited per client (serve.rate_limit, default 60 requests a minute per IP
address or IPv6 /64, sliding-window counter): in memory, or in the configured
Redis so several instances share one budget per client. Each request has a
deadline (serve.timeout, 5s: 503 after it), connections are capped
(serve.max_conns, serve.max_conns_per_ip) and the Host header must be a
loopback name, an IP address or one of serve.hosts (421 otherwise). SIGTERM or
SIGINT stops it gracefully (exit 0).`,
		Example: "  trendfetch serve\n  trendfetch serve --addr 0.0.0.0:8080 --token-file /etc/trendfetch/api-token",
		Args:    cobra.NoArgs,
		PreRunE: a.withConfig,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if addr != "" {
				a.cfg.Serve.Addr = addr
			}
			if tokenFile != "" {
				a.cfg.Serve.TokenFile = tokenFile
			}
			ln, token, err := a.engine().ListenServe()
			if err != nil {
				return err
			}
			defer ln.Close()
			return a.engine().Serve(cmd.Context(), ln, token, nil)
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "", "listen address (default serve.addr, 127.0.0.1:8080)")
	cmd.Flags().StringVar(&tokenFile, "token-file", "", "file holding the bearer token clients must send (required off loopback)")
	return cmd
}
