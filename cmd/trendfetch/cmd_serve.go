package main

import (
	"context"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/trendfetch/trendfetch/internal/config"
	"github.com/trendfetch/trendfetch/internal/engine"
	"github.com/trendfetch/trendfetch/internal/secret"
)

// serveOptions is what `serve` was asked (its flags) and what it serves with.
type serveOptions struct {
	engine          *engine.Engine
	log             zerolog.Logger
	settings        *config.Serve // the engine's serve settings, which --addr and --token-file override
	addr, tokenFile string        // "" = the configured one
}

// newServeCmd is `serve`: its flags fill the options serveRun runs.
func newServeCmd(a *app) *cobra.Command {
	o := &serveOptions{}
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
			o.engine, o.log, o.settings = a.engine(), a.log, &a.cfg.Serve
			return serveRun(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.addr, "addr", "", "listen address (default serve.addr, 127.0.0.1:8080)")
	cmd.Flags().StringVar(&o.tokenFile, "token-file", "", "file holding the bearer token clients must send (required off loopback)")
	return cmd
}

// serveRun listens and serves until ctx ends; a token file other users can
// read is warned about, as every secret file is.
func serveRun(ctx context.Context, o *serveOptions) error {
	if o.addr != "" {
		o.settings.Addr = o.addr
	}
	if o.tokenFile != "" {
		o.settings.TokenFile = o.tokenFile
	}
	warnExposed(o.log, o.settings.TokenFile)
	ln, token, err := o.engine.ListenServe()
	if err != nil {
		return err
	}
	defer ln.Close()
	return o.engine.Serve(ctx, ln, token, nil)
}

// warnExposed warns of each secret file ("" = none) that other users can read.
func warnExposed(log zerolog.Logger, files ...string) {
	for _, f := range files {
		if f != "" && secret.Exposed(f) {
			log.Warn().Str("file", f).Msg("secret file is readable by other users: chmod 600 it")
		}
	}
}
