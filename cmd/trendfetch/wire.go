package main

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"

	"github.com/trendfetch/trendfetch/internal/config"
	"github.com/trendfetch/trendfetch/internal/quota"
)

// openLimiter builds the quota limiter from cfg: the embedded SQLite backend
// (quota.sqlite.path) or Redis (TRENDFETCH_REDIS_URL / quota.redis).
func openLimiter(cfg *config.Config, log zerolog.Logger) (*quota.Limiter, error) {
	buckets, costs, err := cfg.Limits()
	if err != nil {
		return nil, err
	}
	var backend quota.Backend
	switch cfg.Quota.Backend {
	case "redis":
		backend, err = openRedisBackend(cfg, log)
	default:
		backend, err = quota.NewSQLite(cfg.Quota.SQLite.Path)
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

// openRedisBackend connects to the Redis (standalone or Cluster) of the
// config. The connection is lazy: an unreachable Redis surfaces on the first
// decision, where each call site's policy applies.
// go-redis's own log lines (pool dial failures) go to our logger at debug
// level: the limiter already reports backend failures once per run.
func openRedisBackend(cfg *config.Config, log zerolog.Logger) (quota.Backend, error) {
	redis.SetLogger(redisLogger{log})
	client, err := quota.RedisClientFromURL(cfg.Quota.Redis.URL, cfg.Quota.Redis.Cluster)
	if err != nil {
		return nil, err
	}
	return quota.NewRedis(client), nil
}

// redisLogger adapts zerolog to go-redis's internal logging interface.
type redisLogger struct{ log zerolog.Logger }

func (l redisLogger) Printf(_ context.Context, format string, v ...any) {
	l.log.Debug().Str("component", "go-redis").Msgf(format, v...)
}
