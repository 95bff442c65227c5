package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/trendfetch/trendfetch/internal/metrics"
	"github.com/trendfetch/trendfetch/internal/quota"
	"github.com/trendfetch/trendfetch/internal/regions"
	"github.com/trendfetch/trendfetch/internal/sdnotify"
	"github.com/trendfetch/trendfetch/internal/secret"
	"github.com/trendfetch/trendfetch/internal/serve"
	"github.com/trendfetch/trendfetch/internal/store"
	"github.com/trendfetch/trendfetch/internal/termtext"
)

// serveShutdownGrace bounds a graceful stop: connections still open then
// are closed.
const serveShutdownGrace = 10 * time.Second

func newServeCmd(a *app) *cobra.Command {
	var addr, tokenFile string
	cmd := &cobra.Command{
		Use:   "serve [--addr ADDR] [--token-file FILE]",
		Short: "Serve the read API (/v1/...) and the dashboard (/) from the local database",
		Long: `Serve a read-only JSON API and an operator dashboard over the local database:
/v1/search, /v1/charts/{region}, /v1/videos/{id}, /v1/runs, /v1/quota,
/v1/regions, /v1/dashboard, /v1/openapi.yaml, /healthz, /metrics, and the
dashboard at /.
Nothing served spends YouTube API quota or writes the database.

It listens on loopback by default (serve.addr, 127.0.0.1:8080). A non-loopback
address requires --token-file (clients send Authorization: Bearer <token>; the
dashboard takes it as /#token=...). /v1/ is rate-limited per client
(serve.rate_limit, default 60 requests a minute per IP address or IPv6 /64,
sliding-window counter): in memory, or in the configured Redis so several
instances share one budget per client. Each request has a deadline
(serve.timeout, 5s: 503 after it), connections are capped (serve.max_conns,
serve.max_conns_per_ip) and the Host header must be a loopback name, an IP
address or one of serve.hosts (421 otherwise). quota.db is only read.
SIGTERM or SIGINT stops it gracefully (exit 0).`,
		Example: "  trendfetch serve\n  trendfetch serve --addr 0.0.0.0:8080 --token-file /etc/trendfetch/api-token",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := a.loadConfig(); err != nil {
				return err
			}
			if addr != "" {
				a.cfg.Serve.Addr = addr
			}
			if tokenFile != "" {
				a.cfg.Serve.TokenFile = tokenFile
			}
			ln, token, err := a.listenServe()
			if err != nil {
				return err
			}
			defer ln.Close()
			return a.serveUntilDone(cmd.Context(), ln, token, nil)
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "", "listen address (default serve.addr, 127.0.0.1:8080)")
	cmd.Flags().StringVar(&tokenFile, "token-file", "", "file holding the bearer token clients must send (required off loopback)")
	return cmd
}

// listenServe checks serve.addr and serve.token_file and listens: a
// non-loopback address without a token file, an unreadable token file or an
// address that cannot be listened on are usage errors (exit 2).
func (a *app) listenServe() (net.Listener, string, error) {
	sc := a.cfg.Serve
	host, _, err := net.SplitHostPort(sc.Addr)
	if err != nil {
		return nil, "", usagef("trendfetch serve --addr 127.0.0.1:8080", "--addr %q: want host:port (%v)", termtext.Clip(sc.Addr, 80), err)
	}
	token := ""
	if sc.TokenFile != "" {
		if token, err = secret.ReadFile(sc.TokenFile); err != nil {
			return nil, "", usagef("", "serve.token_file %s: %v", sc.TokenFile, err)
		}
		if len(token) < 16 {
			return nil, "", usagef("head -c 24 /dev/urandom | base64 > "+sc.TokenFile, "serve.token_file %s: the token must be at least 16 characters", sc.TokenFile)
		}
		a.secrets.Add(token)
	}
	if !serve.IsLoopbackHost(host) && token == "" {
		return nil, "", usagef("trendfetch serve --addr "+sc.Addr+" --token-file FILE",
			"--addr %s is not a loopback address: give --token-file (serve.token_file) so that only clients with the token can read", sc.Addr)
	}
	ln, err := net.Listen("tcp", sc.Addr)
	if err != nil {
		return nil, "", usagef("trendfetch serve --addr 127.0.0.1:8080", "--addr %s: cannot listen: %v", sc.Addr, err)
	}
	return serve.LimitListener(ln, sc.MaxConns, sc.MaxConnsPerIP), token, nil
}

// serveUntilDone serves the API and dashboard on ln until ctx is done, then
// shuts down within serveShutdownGrace. m, when set, is the scheduler's
// metrics (schedule --serve); otherwise the quota collectors of a fresh
// registry are served.
func (a *app) serveUntilDone(ctx context.Context, ln net.Listener, token string, m *metrics.Metrics) error {
	st, err := store.OpenReadOnly(ctx, a.cfg.Database)
	if err != nil {
		var nd *store.NoDatabaseError
		if errors.As(err, &nd) {
			return usagef("trendfetch run --region US", "no database at %s yet: run trendfetch run first, or set database", a.cfg.Database)
		}
		return err
	}
	defer st.Close()
	var lim *quota.Limiter
	if !a.quotaDBMissing() {
		// Read-only: serve may run as a user who cannot write quota.db.
		if lim, err = openLimiterReadOnly(a.cfg, a.log); err != nil {
			return err
		}
		defer lim.Close()
	}
	creds := make([]string, len(a.cfg.Credentials))
	for i, c := range a.cfg.Credentials {
		creds[i] = c.Name
	}
	if m == nil {
		var reader metrics.StatusReader
		if lim != nil {
			reader = lim
		}
		m = metrics.New(reader, creds, a.cfg.Regions, 0)
		a.instrumentMetrics(m, st) // build info, zero series, last success from the database (cmd_run.go)
	}
	rate, err := a.serveRateLimit()
	if err != nil {
		return err
	}
	if rate.Limiter != nil {
		defer rate.Limiter.Close()
	}
	plan, _ := a.cfg.Schedule.Plan(a.cfg.Regions)
	h := serve.Handler(serve.Options{
		Store: st,
		Quota: func(ctx context.Context) []quota.Status {
			out := make([]quota.Status, 0, len(creds))
			for _, c := range creds {
				if lim == nil {
					out = append(out, quota.Status{Credential: c, Backend: a.cfg.Quota.Backend, Reachable: true})
					continue
				}
				out = append(out, lim.Status(ctx, c))
			}
			return out
		},
		Regions: func(now time.Time) []serve.Region {
			out := make([]serve.Region, 0, len(plan))
			for _, p := range plan {
				next := p.Schedule.Next(now).UTC()
				out = append(out, serve.Region{Region: p.Region, Name: regions.Name(p.Region), Schedule: p.Spec, NextRun: &next})
			}
			return out
		},
		Metrics:     m.Handler(),
		Token:       token,
		RateLimit:   rate,
		Timeout:     a.cfg.Serve.Timeout.Std(),
		Hosts:       a.cfg.Serve.Hosts,
		CORSOrigins: a.cfg.Serve.CORSOrigins,
		Log:         a.log,
	})
	srv := serve.NewServer(h, serve.DefaultTimeouts, a.cfg.Serve.Timeout.Std(), a.log)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	defer sdnotify.Ready(ctx, a.log)() // systemd Type=notify: ready, watchdog, stopping (internal/sdnotify)
	a.log.Info().Str("addr", ln.Addr().String()).Bool("token", token != "").Int64("rate_limit", rate.Limit).
		Str("rate_limit_algorithm", a.cfg.Serve.RateLimit.Algorithm).Dur("timeout", a.cfg.Serve.Timeout.Std()).
		Msg("serving the read API and dashboard")
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), serveShutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		a.log.Warn().Err(err).Msg("connections still open after the shutdown grace: closed")
		srv.Close()
	}
	a.log.Info().Msg("server stopped")
	return nil
}

// serveRateLimit builds the per-client limiter of serve.rate_limit: the
// sliding-window counter (default) or log, in the configured Redis when the
// quota backend is Redis (instances share one budget per client), else in
// memory.
func (a *app) serveRateLimit() (serve.RateLimit, error) {
	rl := a.cfg.Serve.RateLimit
	if rl.Limit < 0 {
		return serve.RateLimit{}, nil
	}
	window := rl.Window.Std()
	var l serve.Limiter
	var err error
	switch redisBacked := a.cfg.Quota.Backend == "redis"; {
	case rl.Algorithm == "log" && redisBacked:
		var b quota.Backend
		if b, err = openRedisBackend(a.cfg, a.log); err == nil {
			if l, err = serve.NewLog(b, rl.Limit, window); err != nil {
				b.Close()
			}
		}
	case rl.Algorithm == "log":
		l, err = serve.NewLog(quota.NewMemory(time.Now), rl.Limit, window)
	case redisBacked:
		var c redis.UniversalClient
		if c, err = openRedisClient(a.cfg, a.log); err == nil {
			if l, err = serve.NewRedisCounter(c, rl.Limit, window); err != nil {
				c.Close()
			}
		}
	default:
		l, err = serve.NewCounter(rl.Limit, window, nil)
	}
	if err != nil {
		return serve.RateLimit{}, fmt.Errorf("serve.rate_limit: %w", err)
	}
	return serve.RateLimit{Limiter: l, Limit: rl.Limit, Window: window, Key: rl.Key}, nil
}
