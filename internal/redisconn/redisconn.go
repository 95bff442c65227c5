// Package redisconn builds trendfetch's go-redis clients (standalone,
// Sentinel or Cluster) from quota.redis settings, with the short timeouts a
// limiter decision needs, keeping passwords out of its errors.
package redisconn

import (
	"cmp"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
)

// Defaults of New: failures surface fast and the call site's policy applies (docs/design.md §4
// "Short timeouts"). Scripts that must not run twice opt out of the retry per command.
const (
	defaultDialTimeout = 300 * time.Millisecond
	defaultIOTimeout   = 300 * time.Millisecond // each read and write
	defaultMaxRetries  = 1                      // go-redis: 0 = its default of 3
)

// Sentinel is a Redis Sentinel deployment for New (the zero value: none): the master's name,
// host:port of some Sentinels, and the Sentinels' own user ("" = default) and password. The URL's
// host is then ignored (but for TLS); user, password, db and TLS still come from it.
type Sentinel struct {
	Master             string
	Addrs              []string
	Username, Password string
}

// New builds a go-redis client with short timeouts (dial, read and write 300ms, one retry; URL
// parameters such as ?dial_timeout=1s win), without connecting. rawURL is go-redis ParseURL syntax.
// With cluster ("host:port" of some nodes) it is a *redis.ClusterClient (db 0 only), with a
// Sentinel a failover *redis.Client, both taking user, password and TLS from rawURL ("" = none);
// otherwise rawURL is required. How the Sentinel settings combine with each other, cluster and
// rawURL is config's to check (quota.redis.sentinel, exit 2). Errors never hold a password.
func New(rawURL string, cluster []string, cfg Sentinel) (redis.UniversalClient, error) {
	sentinel := cfg.Master != ""
	if rawURL == "" && len(cluster) == 0 && !sentinel {
		return nil, errors.New("redisconn: no Redis URL, no Redis Cluster and no Sentinel addresses")
	}
	o := &redis.Options{}
	if rawURL != "" {
		var err error
		if o, err = redis.ParseURL(rawURL); err != nil {
			return nil, fmt.Errorf("redisconn: invalid Redis URL %s: %s", redact(rawURL), URLProblem(rawURL))
		}
	}
	o.DialTimeout = cmp.Or(o.DialTimeout, defaultDialTimeout)
	o.ReadTimeout = cmp.Or(o.ReadTimeout, defaultIOTimeout)
	o.WriteTimeout = cmp.Or(o.WriteTimeout, defaultIOTimeout)
	o.PoolTimeout = cmp.Or(o.PoolTimeout, o.DialTimeout+o.ReadTimeout)
	o.MaxRetries = cmp.Or(o.MaxRetries, defaultMaxRetries)
	// One dial attempt per command (a dead Redis fails fast).
	o.DialerRetries = 1
	o.MinRetryBackoff, o.MaxRetryBackoff = 8*time.Millisecond, 64*time.Millisecond
	o.ContextTimeoutEnabled = true
	u := &redis.UniversalOptions{
		Username: o.Username, Password: o.Password, DB: o.DB, TLSConfig: o.TLSConfig,
		DialTimeout: o.DialTimeout, DialerRetries: o.DialerRetries, ReadTimeout: o.ReadTimeout,
		WriteTimeout: o.WriteTimeout, PoolTimeout: o.PoolTimeout, MaxRetries: o.MaxRetries,
		MinRetryBackoff: o.MinRetryBackoff, MaxRetryBackoff: o.MaxRetryBackoff,
		ContextTimeoutEnabled: o.ContextTimeoutEnabled,
	}
	switch {
	case len(cluster) > 0:
		if o.DB != 0 {
			return nil, fmt.Errorf("redisconn: Redis URL %s selects db %d, but Redis Cluster has only db 0", redact(rawURL), o.DB)
		}
		u.Addrs, u.MaxRedirects = cluster, 3
		return redis.NewClusterClient(u.Cluster()), nil
	case sentinel:
		u.MasterName, u.Addrs = cfg.Master, slices.Clone(cfg.Addrs)
		u.SentinelUsername, u.SentinelPassword = cfg.Username, cfg.Password
		return redis.NewFailoverClient(u.Failover()), nil
	}
	return redis.NewClient(o), nil
}

// redact returns rawURL with its password replaced by "xxxxx"; a URL that
// does not parse is not shown.
func redact(rawURL string) string {
	if u, err := url.Parse(rawURL); err == nil {
		return u.Redacted()
	}
	return "(not shown: it does not parse)"
}
