package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/spf13/cobra"

	"github.com/trendfetch/trendfetch/internal/config"
	"github.com/trendfetch/trendfetch/internal/metrics"
	"github.com/trendfetch/trendfetch/internal/quota"
	"github.com/trendfetch/trendfetch/internal/regions"
	"github.com/trendfetch/trendfetch/internal/sdnotify"
	"github.com/trendfetch/trendfetch/internal/serve"
	"github.com/trendfetch/trendfetch/internal/store"
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
/v1/regions, /v1/openapi.yaml, /healthz, /metrics, and the dashboard at /.
Nothing served spends YouTube API quota or writes the database.

It listens on loopback by default (serve.addr, 127.0.0.1:8080). A non-loopback
address requires --token-file (clients send Authorization: Bearer <token>; the
dashboard takes it as /#token=...). /v1/ is rate-limited per client
(serve.rate_limit, default 60 requests a minute per IP address): in memory, or
in the configured Redis so several instances share one budget per client.
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
		return nil, "", usagef("trendfetch serve --addr 127.0.0.1:8080", "--addr %q: want host:port (%v)", config.Truncate(sc.Addr, 80), err)
	}
	token := ""
	if sc.TokenFile != "" {
		if token, err = config.ReadSecretFile(sc.TokenFile); err != nil {
			return nil, "", usagef("", "serve.token_file %s: %v", sc.TokenFile, err)
		}
		if len(token) < 16 {
			return nil, "", usagef("head -c 24 /dev/urandom | base64 > "+sc.TokenFile, "serve.token_file %s: the token must be at least 16 characters", sc.TokenFile)
		}
		a.secrets.Add(token)
	}
	if !isLoopback(host) && token == "" {
		return nil, "", usagef("trendfetch serve --addr "+sc.Addr+" --token-file FILE",
			"--addr %s is not a loopback address: give --token-file (serve.token_file) so that only clients with the token can read", sc.Addr)
	}
	ln, err := net.Listen("tcp", sc.Addr)
	if err != nil {
		return nil, "", usagef("trendfetch serve --addr 127.0.0.1:8080", "--addr %s: cannot listen: %v", sc.Addr, err)
	}
	return ln, token, nil
}

// isLoopback reports whether host names only the loopback interface.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
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
		if lim, err = openLimiter(a.cfg, a.log); err != nil {
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
	rate, err := a.serveRateLimit(lim)
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
		Metrics:   m.Handler(),
		Token:     token,
		RateLimit: rate,
		Log:       a.log,
	})
	srv := serve.NewServer(h, serve.DefaultTimeouts)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	defer sdnotify.Ready(ctx, a.log)() // systemd Type=notify: ready, watchdog, stopping (internal/sdnotify)
	a.log.Info().Str("addr", ln.Addr().String()).Bool("token", token != "").Int64("rate_limit", rate.Limit).
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

// serveRateLimit builds the per-client limiter of serve.rate_limit: in the
// configured Redis when the quota backend is Redis (instances share one
// budget per client), else in memory.
func (a *app) serveRateLimit(lim *quota.Limiter) (serve.RateLimit, error) {
	rl := a.cfg.Serve.RateLimit
	if rl.Limit < 0 {
		return serve.RateLimit{}, nil
	}
	var backend quota.Backend = quota.NewMemory()
	if a.cfg.Quota.Backend == "redis" {
		b, err := openRedisBackend(a.cfg, a.log)
		if err != nil {
			return serve.RateLimit{}, err
		}
		backend = b
	}
	l, err := serve.NewRateLimiter(backend, rl.Limit, rl.Window.Std())
	if err != nil {
		backend.Close()
		return serve.RateLimit{}, err
	}
	return serve.RateLimit{Limiter: l, Limit: rl.Limit, Window: rl.Window.Std(), Key: rl.Key}, nil
}
