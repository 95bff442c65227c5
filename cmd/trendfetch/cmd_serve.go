package main

import "github.com/spf13/cobra"

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
