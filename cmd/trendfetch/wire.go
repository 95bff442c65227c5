package main

import (
	"fmt"

	"github.com/trendfetch/trendfetch/internal/config"
	"github.com/trendfetch/trendfetch/internal/quota"
)

// openLimiter builds the quota limiter from cfg: the embedded SQLite backend
// (quota.sqlite.path) or Redis (TRENDFETCH_REDIS_URL / quota.redis).
func openLimiter(cfg *config.Config) (*quota.Limiter, error) {
	buckets, costs, err := cfg.Limits()
	if err != nil {
		return nil, err
	}
	var backend quota.Backend
	switch cfg.Quota.Backend {
	case "redis":
		backend, err = openRedisBackend(cfg)
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
func openRedisBackend(cfg *config.Config) (quota.Backend, error) {
	client, err := quota.RedisClientFromURL(cfg.Quota.Redis.URL, cfg.Quota.Redis.Cluster)
	if err != nil {
		return nil, err
	}
	return quota.NewRedis(client), nil
}
