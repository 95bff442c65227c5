package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"

	"github.com/trendfetch/trendfetch/internal/config"
	"github.com/trendfetch/trendfetch/internal/quota"
	"github.com/trendfetch/trendfetch/internal/redisconn"
)

// openLimiterReadOnly is openLimiter for the read-only commands (quota
// status): the embedded backend is opened without creating or migrating
// anything, and works on read-only media.
func openLimiterReadOnly(cfg *config.Config, log zerolog.Logger) (*quota.Limiter, error) {
	return openLimiterMode(cfg, log, true)
}

// openLimiter builds the quota limiter from cfg: the embedded SQLite backend
// (quota.sqlite.path) or Redis (TRENDFETCH_REDIS_URL / quota.redis).
func openLimiter(cfg *config.Config, log zerolog.Logger) (*quota.Limiter, error) {
	return openLimiterMode(cfg, log, false)
}

// openLimiterMode is openLimiter, or openLimiterReadOnly when readOnly.
func openLimiterMode(cfg *config.Config, log zerolog.Logger, readOnly bool) (*quota.Limiter, error) {
	buckets, costs, err := cfg.Limits()
	if err != nil {
		return nil, err
	}
	var backend quota.Backend
	switch cfg.Quota.Backend {
	case "redis":
		backend, err = openRedisBackend(cfg, log)
	default:
		if readOnly {
			backend, err = quota.NewSQLite(cfg.Quota.SQLite.Path, quota.WithSQLiteReadOnly())
		} else {
			backend, err = quota.NewSQLite(cfg.Quota.SQLite.Path)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("cannot open %s quota backend: %w", cfg.Quota.Backend, err)
	}
	lim, err := quota.New(backend, buckets, costs)
	if err != nil {
		backend.Close()
		return nil, err
	}
	return lim, nil
}

// openRedisBackend connects to the Redis (standalone, Sentinel or Cluster)
// of the config, with quota.redis.wait_replicas. The connection is lazy: an
// unreachable Redis surfaces on the first decision, where each call site's
// policy applies.
// go-redis's own log lines (pool dial failures) go to our logger at debug
// level: the limiter already reports backend failures once per run.
func openRedisBackend(cfg *config.Config, log zerolog.Logger) (quota.Backend, error) {
	client, err := openRedisClient(cfg, log)
	if err != nil {
		return nil, err
	}
	rc := cfg.Quota.Redis
	return quota.NewRedis(client, quota.WithRedisWaitReplicas(rc.WaitReplicas, rc.WaitTimeout.Std())), nil
}

// openRedisClient connects to the configured Redis (quota.redis: URL,
// Sentinel or Cluster); a bad URL is a usage error.
func openRedisClient(cfg *config.Config, log zerolog.Logger) (redis.UniversalClient, error) {
	redis.SetLogger(redisLogger{log})
	rc := cfg.Quota.Redis
	var opts []redisconn.Option
	if s := rc.Sentinel; s.Configured() {
		opts = append(opts, redisconn.WithSentinel(s.Master, s.Addrs))
		if s.Username != "" || s.Password != "" {
			opts = append(opts, redisconn.WithSentinelAuth(s.Username, s.Password))
		}
	}
	client, err := redisconn.New(rc.URL, rc.Cluster, opts...)
	if err != nil {
		return nil, redisURLError(err)
	}
	return client, nil
}

// redisURLError is the usage error (exit 2) for a Redis URL that
// redisconn.New refused. It names the setting and the problem, never
// the URL: a URL that does not parse never gets here (config's Validate
// names its wrong part first), and the caller's output is scrubbed of the
// password as well.
func redisURLError(err error) error {
	const setting = "quota.redis.url (TRENDFETCH_REDIS_URL or quota.redis.url_file)"
	msg := err.Error()
	if _, after, ok := strings.Cut(msg, ": "); ok && strings.HasPrefix(msg, "redisconn: ") {
		msg = after
	}
	return &usageError{err: fmt.Errorf("%s: %s", setting, msg)}
}

// redisLogger adapts zerolog to go-redis's internal logging interface.
type redisLogger struct{ log zerolog.Logger }

func (l redisLogger) Printf(_ context.Context, format string, v ...any) {
	l.log.Debug().Str("component", "go-redis").Msgf(format, v...)
}
