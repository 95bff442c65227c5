package main

import (
	"context"
	"errors"
	"net"

	"github.com/spf13/cobra"

	"github.com/trendfetch/trendfetch/internal/metrics"
	"github.com/trendfetch/trendfetch/internal/secret"
	"github.com/trendfetch/trendfetch/internal/serve"
	"github.com/trendfetch/trendfetch/internal/store"
	"github.com/trendfetch/trendfetch/internal/termtext"
)

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
		PreRunE: a.withConfig,
		RunE: func(cmd *cobra.Command, _ []string) error {
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

// serveUntilDone serves the API and dashboard on ln until ctx is done
// (engine.Serve). m, when set, is the scheduler's metrics.
func (a *app) serveUntilDone(ctx context.Context, ln net.Listener, token string, m *metrics.Metrics) error {
	err := a.engine().Serve(ctx, ln, token, m)
	var nd *store.NoDatabaseError
	if errors.As(err, &nd) {
		return usagef("trendfetch run --region US", "no database at %s yet: run trendfetch run first, or set database", a.cfg.Database)
	}
	return err
}
