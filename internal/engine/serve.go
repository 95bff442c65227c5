package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trendfetch/trendfetch/internal/metrics"
	"github.com/trendfetch/trendfetch/internal/quota"
	"github.com/trendfetch/trendfetch/internal/regions"
	"github.com/trendfetch/trendfetch/internal/sdnotify"
	"github.com/trendfetch/trendfetch/internal/secret"
	"github.com/trendfetch/trendfetch/internal/serve"
	"github.com/trendfetch/trendfetch/internal/store"
	"github.com/trendfetch/trendfetch/internal/termtext"
)

// ListenServe checks serve.addr and serve.token_file and listens, capped by
// serve.max_conns(_per_ip); token is the file's ("" = none; added to Options.Secrets).
// A non-loopback address without a token, an unreadable or short token and an
// address that cannot be listened on are usage errors.
func (e *Engine) ListenServe() (ln net.Listener, token string, err error) {
	sc := e.cfg.Serve
	host, _, err := net.SplitHostPort(sc.Addr)
	if err != nil {
		return nil, "", Usagef("trendfetch serve --addr 127.0.0.1:8080", "--addr %q: want host:port (%v)", termtext.Clip(sc.Addr, 80), err)
	}
	if sc.TokenFile != "" {
		if token, err = secret.ReadFile(sc.TokenFile); err != nil {
			return nil, "", Usagef("", "serve.token_file %s: %v", sc.TokenFile, err)
		}
		if len(token) < 16 {
			return nil, "", Usagef("head -c 24 /dev/urandom | base64 > "+sc.TokenFile, "serve.token_file %s: the token must be at least 16 characters", sc.TokenFile)
		}
	}
	if !serve.IsLoopbackHost(host) && token == "" {
		return nil, "", Usagef("trendfetch serve --addr "+sc.Addr+" --token-file FILE",
			"--addr %s is not a loopback address: give --token-file (serve.token_file) so that only clients with the token can read", sc.Addr)
	}
	if ln, err = net.Listen("tcp", sc.Addr); err != nil {
		return nil, "", Usagef("trendfetch serve --addr 127.0.0.1:8080", "--addr %s: cannot listen: %v", sc.Addr, err)
	}
	e.o.Secrets.Add(token)
	return serve.LimitListener(ln, sc.MaxConns, sc.MaxConnsPerIP), token, nil
}

// ListenMetrics listens on addr (host:port) for the scheduler's /metrics and /healthz; a
// malformed addr is a usage error.
func ListenMetrics(addr string) (net.Listener, error) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		err = errors.New("want host:port, e.g. 127.0.0.1:9464")
	} else if n, perr := strconv.Atoi(port); perr != nil || n < 0 || n > 65535 {
		err = fmt.Errorf("port %q: want a number 0-65535", termtext.Clip(port, 20))
	}
	if err != nil {
		return nil, Usagef("trendfetch schedule --metrics-addr 127.0.0.1:9464", "--metrics-addr %q: %v", termtext.Clip(addr, 80), err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot serve metrics: %w", err)
	}
	return ln, nil
}

// Serve serves the read API and dashboard on ln, with bearer token ("" = none) and m's metrics
// (nil: its own), until ctx is done, then shuts down within 10s. It only reads. It listens at
// once: until a PostgreSQL database opens (tried again every StoreRetry) every read answers 503
// naming why. Errors: no database yet (a usage error), a SQLite database or a database URL that
// cannot be used, the quota database, serve.rate_limit, the listener.
func (e *Engine) Serve(ctx context.Context, ln net.Listener, token string, m *metrics.Metrics) error {
	var lim *quota.Limiter
	var err error
	if !e.quotaDBMissing() { // read-only: serve may run as a user who cannot write quota.db
		if lim, err = e.OpenLimiter(true); err != nil {
			return err
		}
		defer lim.Close()
	}
	rate, err := e.serveRateLimit()
	if err != nil {
		return err
	}
	if rate.Limiter != nil {
		defer rate.Limiter.Close()
	}
	sc := e.cfg.Serve
	h, publish := e.serveHandler(lim, m, serve.Options{Quota: e.quotaStatuses(lim), Regions: e.servedRegions(),
		Token: token, RateLimit: rate, Timeout: sc.Timeout.Std(), Hosts: sc.Hosts, CORSOrigins: sc.CORSOrigins, Log: e.log})
	srv := serve.NewServer(h, serve.DefaultTimeouts, sc.Timeout.Std(), e.log)
	defer sdnotify.Ready(ctx, e.log)() // systemd Type=notify: ready, watchdog, stopping
	e.log.Info().Str("addr", ln.Addr().String()).Bool("token", token != "").Int64("rate_limit", max(sc.RateLimit.Limit, 0)).
		Str("rate_limit_algorithm", sc.RateLimit.Algorithm).Dur("timeout", sc.Timeout.Std()).
		Msg("serving the read API and dashboard")
	ctx, cancel := context.WithCancel(ctx)
	var st *store.Store
	opened := make(chan struct{})
	go func() { defer close(opened); st, err = e.serveStore(ctx, cancel, publish) }()
	if store.EngineOf(e.cfg.Database) != store.PostgreSQL {
		<-opened // a local file opens at once or not at all: before the first request, as always
	}
	serr := e.serveUntilDone(ctx, srv, ln)
	cancel()
	<-opened
	if st != nil {
		st.Close()
	}
	return cmp.Or(err, serr)
}

// StoreRetry is how long serve waits after a failed attempt to open its database before the next.
var StoreRetry = 5 * time.Second

// serveStore opens serve's database, trying again StoreRetry after each failure, until it opens
// or ctx is done; each attempt's outcome goes to publish. Only PostgreSQL is tried again: a
// SQLite database, no database yet (a usage error) and a database URL that cannot be used are
// errors (cancel then stops the server).
func (e *Engine) serveStore(ctx context.Context, cancel func(), publish func(*store.Store, error)) (*store.Store, error) {
	for {
		st, err := e.OpenStore(ctx, true)
		if nd := (*store.NoDatabaseError)(nil); errors.As(err, &nd) {
			err = Usagef("trendfetch run --region US", "%v (or set database)", nd)
		}
		if ctx.Err() != nil || err == nil {
			publish(st, err)
			return st, nil
		} else if store.EngineOf(e.cfg.Database) != store.PostgreSQL || errors.As(err, new(*UsageError)) || errors.As(err, new(*SettingError)) {
			cancel() // nothing a retry mends: a SQLite file's state, the configuration
			return nil, err
		}
		e.log.Warn().Err(err).Dur("retry_in", StoreRetry).Msg("the database cannot be opened yet: reads answer 503")
		publish(nil, err)
		select {
		case <-ctx.Done():
			return nil, nil
		case <-time.After(StoreRetry):
		}
	}
}

// serveHandler returns serve's handler and what sets it: o on st, or while err is not nil,
// serve.Opening naming it; with m's metrics, nil: its own on lim (and st once open). Until the
// first attempt to open ends, a request waits for it (at most o.Timeout).
func (e *Engine) serveHandler(lim *quota.Limiter, m *metrics.Metrics, o serve.Options) (http.Handler, func(*store.Store, error)) {
	var reader metrics.StatusReader
	if lim != nil {
		reader = lim
	}
	if m != nil {
		o.Metrics = m.Handler()
	}
	var h atomic.Pointer[http.Handler]
	attempted, once := make(chan struct{}), sync.Once{}
	set := func(st *store.Store, err error) {
		if m == nil && (o.Metrics == nil || err == nil) {
			o.Metrics = e.metrics(reader, e.cfg.Regions, st).Handler()
		}
		next := serve.Opening(o, err)
		if err == nil {
			o.Store = st
			o.Coverage = func(ctx context.Context, region string, since time.Duration) (store.Coverage, error) {
				return e.Coverage(ctx, st, region, since, time.Now())
			}
			next = serve.Handler(o)
		}
		h.Store(&next)
	}
	set(nil, errors.New("opening it"))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-attempted:
			case <-time.After(o.Timeout):
			case <-r.Context().Done():
			}
			(*h.Load()).ServeHTTP(w, r)
		}), func(st *store.Store, err error) {
			set(st, err)
			once.Do(func() { close(attempted) })
		}
}

// quotaStatuses is serve's quota view: each configured credential's status from lim (nil: no
// quota database yet, each credential reachable with nothing used).
func (e *Engine) quotaStatuses(lim *quota.Limiter) func(context.Context) []quota.Status {
	creds := e.credentialNames()
	return func(ctx context.Context) []quota.Status {
		out := make([]quota.Status, len(creds))
		for i, c := range creds {
			out[i] = quota.Status{Credential: c, Backend: e.cfg.Quota.Backend, Reachable: true}
			if lim != nil {
				out[i] = lim.Status(ctx, c)
			}
		}
		return out
	}
}

// servedRegions is serve's configured regions: each scheduled region with its schedule and next run.
func (e *Engine) servedRegions() func(time.Time) []serve.Region {
	plan, _ := e.cfg.Schedule.Plan(e.cfg.Regions)
	return func(now time.Time) []serve.Region {
		out := make([]serve.Region, len(plan))
		for i, p := range plan {
			next := p.Schedule.Next(now).UTC()
			out[i] = serve.Region{Region: p.Region, Name: regions.Name(p.Region), Schedule: &p.Spec, NextRun: &next,
				Interval: p.Schedule.Next(next).Sub(next)}
		}
		return out
	}
}

// serveUntilDone serves srv on ln until ctx is done, then shuts it down within 10s (connections
// still open then are closed). Errors: the listener's.
func (e *Engine) serveUntilDone(ctx context.Context, srv *http.Server, ln net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		e.log.Warn().Err(err).Msg("connections still open after the shutdown grace: closed")
		srv.Close()
	}
	e.log.Info().Msg("server stopped")
	return nil
}

// serveRateLimit builds serve.rate_limit's per-client limiter, in Redis when the quota backend
// is Redis (instances share one budget per client), else in memory.
func (e *Engine) serveRateLimit() (serve.RateLimit, error) {
	rl := e.cfg.Serve.RateLimit
	if rl.Limit < 0 {
		return serve.RateLimit{}, nil
	}
	rate := serve.RateLimit{Limit: rl.Limit, Window: rl.Window.Std(), Key: rl.Key}
	if e.cfg.Quota.Backend != "redis" {
		rate.Limiter = serve.NewCounter(rate.Limit, rate.Window, nil)
		return rate, nil
	}
	c, err := e.openRedisClient()
	if err != nil {
		return serve.RateLimit{}, fmt.Errorf("serve.rate_limit: %w", err)
	}
	rate.Limiter = serve.NewRedisCounter(c, rate.Limit, rate.Window)
	return rate, nil
}
